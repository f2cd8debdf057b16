"""The operations HTTP API: `create_app(ledger, tokens, clock)` -> a FastAPI app.

The API is a driver like the CLI: every change goes through the same application
commands (`CrawlLedger`), every read through the same read models, so no rule
exists twice. Requests carry `Authorization: Bearer <token>` (`api.auth`): 401
without a valid token, 403 when its scope is too small. Errors are RFC 9457
`application/problem+json`: 404 unknown id, 409 a transition the domain refuses
(with its reason), 422 invalid input — never a 500 for bad input. A request body is
capped, timed and not read before its credentials are checked (`api.http_limits`);
metrics labels come from fixed sets (`api.request_metrics`).

Reads only read: a projector thread beside the server keeps the read models current
(`runtime.projector`), requests read them without a lock and report the lag; writes
run one at a time and wait, bounded, until the read models show them
(`api.consistency`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

from fastapi import FastAPI, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from fastapi.staticfiles import StaticFiles
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    REGISTRY,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)
from prometheus_client.core import CounterMetricFamily, Metric
from prometheus_client.registry import Collector
from starlette.types import Scope

from api.auth import TokenStore
from api.bot import RESULT_MAX_BYTES
from api.consistency import Writes, lag
from api.dashboard import FORM_MAX_BYTES, build_dashboard
from api.docs import add_docs
from api.events_import import build_import_router
from api.http_limits import CapFor, RequestLimits, RequestRefused, authenticated_by
from api.image_routes import build_images_router
from api.request_metrics import RequestMetrics, route_template
from api.routes import PROBLEMS, AlertSender, ApiProblem, build_router, requirement
from api.sessions import COOKIE, Sessions
from api.tokens import build_tokens_router
from domain.errors import Forbidden, InvalidInput, LedgerError, NotFound
from runtime.clock import Clock
from runtime.defaults import DEFAULTS
from runtime.image_step import ImageStore
from runtime.ledger import Ledger
from runtime.projector import Projector
from runtime.proxy_pool import AddressGuard
from runtime.remote import BotPages

__all__ = ["BODY_MAX_BYTES", "BODY_TIMEOUT", "Probes", "create_app", "problem"]

#: the largest request body a route takes unless it says otherwise (bytes)
BODY_MAX_BYTES = 1 << 20
#: seconds a request body may stall before the request is answered 408
BODY_TIMEOUT = 30.0


@dataclass(frozen=True)
class Probes:
    """What the API cannot see on its own, handed in by the composition root.

    `relay_position()`: the relay's acknowledged position (None: no relay configured);
    `broker()`: None when the broker answers, else why not (None: no broker configured).
    """

    relay_position: Callable[[], int] | None = None
    broker: Callable[[], str | None] | None = None


def problem(status: int, title: str, detail: str,
            headers: Mapping[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"type": "about:blank", "title": title, "status": status,
                         "detail": detail}, status_code=status, headers=headers,
                        media_type="application/problem+json")


def body_caps() -> CapFor:
    """Each route's body cap: a bot's result its page, the events import its own (it
    streams to disk, `serve --max-import-mb`), any other API call `BODY_MAX_BYTES`, a
    dashboard form `FORM_MAX_BYTES`."""
    own = {"/api/v1/bot/leases/{lease_id}/result": RESULT_MAX_BYTES,
           "/api/v1/events/import": None}

    def cap_for(scope: Scope) -> int | None:
        route = route_template(scope)
        if route in own:
            return own[route]
        return BODY_MAX_BYTES if route.startswith("/api/") else FORM_MAX_BYTES

    return cap_for


def create_app(ledger: Ledger, tokens: TokenStore, clock: Clock, probes: Probes = Probes(),
               lease_ttl: float = DEFAULTS.lease_ttl,
               alert_sender: AlertSender | None = None,
               proxy_guard: AddressGuard | None = None,
               import_max_bytes: int = DEFAULTS.import_max_bytes,
               body_timeout: float = BODY_TIMEOUT,
               bot_pages: BotPages | None = None,
               projector: Projector | None = None) -> FastAPI:
    """The API over `ledger`; with `bot_pages` (the composition root's, with the
    deployment's adapters and limits) it serves the bot API too. Without `projector`, it
    runs its own while it serves (started before the first request, with the read models
    caught up, and stopped at shutdown)."""
    own = projector is None
    projector = projector if projector is not None else Projector(ledger)

    @asynccontextmanager
    async def projecting(_: FastAPI) -> AsyncIterator[None]:
        if own:
            await run_in_threadpool(projector.start)
        try:
            yield
        finally:
            if own:
                await run_in_threadpool(projector.stop)

    app = FastAPI(title="crawl-ledger", version="1", docs_url=None, redoc_url=None,
                  responses={503: PROBLEMS[422] | {"description": "not ready"}},
                  lifespan=projecting)
    writes = Writes(ledger, projector)
    registry = CollectorRegistry()
    latency = Histogram("crawl_ledger_api_request_seconds", "API request latency",
                        ["method", "route", "status"], registry=registry)
    jobs = Gauge("crawl_ledger_jobs", "jobs by state", ["state"], registry=registry)
    events = _EventCount()
    registry.register(events)
    errors = Counter("crawl_ledger_api_errors_total", "API error responses", ["status"],
                     registry=registry)
    failing = Gauge("crawl_ledger_jobs_failing", "jobs whose last run failed, by reason",
                    ["reason"], registry=registry)
    projection_lag = Gauge("crawl_ledger_projection_lag_events",
                           "events recorded and not yet in the read models", registry=registry)
    misses = Gauge("crawl_ledger_store_extraction_misses_ratio",
                   "share of the products a store's recent crawls saw with no price or a "
                   "low-confidence one", ["store"], registry=registry)
    relay_lag = Gauge("crawl_ledger_relay_lag_events",
                      "events recorded and not yet acknowledged by Kafka",
                      registry=registry if probes.relay_position is not None else None)

    def lags() -> dict[str, int]:
        """The store's head and how far behind the read models (and relay) are."""
        head, behind = lag(ledger)
        found = {"head": head, "projection_lag": behind}
        if probes.relay_position is not None:
            found["relay_lag"] = max(0, head - probes.relay_position())
        return found

    def observe(method: str, route: str, status: int, seconds: float) -> None:
        latency.labels(method, route, str(status)).observe(seconds)
        if status >= 400:
            errors.labels(str(status)).inc()

    sessions = Sessions(tokens, ledger.tables.sessions)
    app.add_middleware(RequestLimits, guarded=("/api/",), cap_for=body_caps(),
                       body_timeout=body_timeout,
                       authenticated=authenticated_by(tokens.verify, sessions.get, COOKIE))
    # added last, so outermost: it measures every answer, the limits' refusals included
    app.add_middleware(RequestMetrics, observe=observe)

    @app.exception_handler(RequestRefused)
    async def refused_body(_: Request, error: RequestRefused) -> JSONResponse:
        return problem(error.status_code, error.title, error.detail, error.headers)

    @app.exception_handler(LedgerError)
    async def refused(_: Request, error: LedgerError) -> JSONResponse:
        if isinstance(error, NotFound):
            return problem(404, "Not Found", str(error))
        if isinstance(error, InvalidInput):
            return problem(422, "Invalid input", str(error))
        if isinstance(error, Forbidden):
            return problem(403, "Forbidden", str(error))
        return problem(409, "Refused", str(error))  # a refused transition or a conflict

    @app.exception_handler(ApiProblem)
    async def api_problem(_: Request, error: ApiProblem) -> JSONResponse:
        return problem(error.status, error.title, error.detail)

    @app.exception_handler(RequestValidationError)
    async def invalid(_: Request, error: RequestValidationError) -> JSONResponse:
        first = error.errors()[0] if error.errors() else {}
        where = ".".join(str(part) for part in first.get("loc", ()))
        return problem(422, "Invalid input", f"{where}: {first.get('msg', 'invalid')}")

    @app.exception_handler(ValueError)
    async def bad_value(_: Request, error: ValueError) -> JSONResponse:
        return problem(422, "Invalid input", str(error))

    @app.get("/healthz", tags=["health"])
    def healthz() -> dict[str, str]:
        return {"status": "ok"}

    @app.get("/readyz", tags=["health"])
    def readyz() -> Any:
        try:
            found: dict[str, Any] = lags()
        except Exception as error:  # noqa: BLE001 - the store is unreachable: not ready
            return problem(503, "Not ready", f"event store unreachable: {type(error).__name__}")
        if probes.broker is not None:
            down = probes.broker()
            if down is not None:
                return problem(503, "Not ready", f"broker unreachable: {down}")
            found["broker"] = "reachable"
        return {"status": "ready", **found}

    @app.get("/metrics", tags=["health"], response_class=Response)
    def metrics() -> Response:
        found = lags()  # the read models are read as they are: this is how far behind
        rows = ledger.read.jobs()
        stores = ledger.read.stores()
        head = found["head"]
        counts: dict[str, int] = {}
        reasons: dict[str, int] = {}
        for row in rows:
            counts[row["state"]] = counts.get(row["state"], 0) + 1
            if row.get("last_status") == "failed" and row.get("last_error_kind"):
                reasons[row["last_error_kind"]] = reasons.get(row["last_error_kind"], 0) + 1
        jobs.clear()
        for state, count in counts.items():
            jobs.labels(state).set(count)
        failing.clear()
        for reason, count in reasons.items():
            failing.labels(reason).set(count)
        misses.clear()
        for store in stores:  # store ids only: the label set is bounded by the stores
            if store.get("misses_ratio") is not None:
                misses.labels(store["store_id"]).set(store["misses_ratio"])
        events.head = head
        projection_lag.set(found["projection_lag"])
        if "relay_lag" in found:
            relay_lag.set(found["relay_lag"])
        # the job step's own metrics (leases, fetch latency, results…: runtime/metrics.py)
        # count the bot results this process recorded
        return Response(generate_latest(registry) + generate_latest(REGISTRY),
                        media_type=CONTENT_TYPE_LATEST)

    app.include_router(build_router(ledger, tokens, clock, writes, lease_ttl, sessions,
                                    alert_sender, proxy_guard, bot_pages), prefix="/api/v1")
    app.include_router(build_import_router(ledger, writes, requirement(tokens, sessions)("admin"),
                                           import_max_bytes), prefix="/api/v1")
    app.include_router(build_tokens_router(tokens, clock, writes.lock,
                                           requirement(tokens, sessions)("admin")),
                       prefix="/api/v1")
    app.include_router(build_images_router(ImageStore(ledger.data_dir),
                                           requirement(tokens, sessions)))
    app.include_router(build_dashboard(ledger, sessions, clock, writes, probes.relay_position,
                                       alert_sender))
    app.mount("/static", StaticFiles(packages=[("api", "static")]), name="static")
    add_docs(app)
    return app


class _EventCount(Collector):
    """`crawl_ledger_events_total`, a counter: the event store's head only grows, and
    `rate()` of it is the recording rate."""

    def __init__(self) -> None:
        self.head = 0

    def collect(self) -> Iterator[Metric]:
        yield CounterMetricFamily("crawl_ledger_events", "events in the event store",
                                  value=self.head)
