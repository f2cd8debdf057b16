"""The operations HTTP API: `create_app(ledger, tokens, clock)` -> a FastAPI app.

The API is a driver like the CLI: every change goes through the same application
commands (`CrawlLedger`), every read through the same read models, so no rule
exists twice. Requests carry `Authorization: Bearer <token>` (`api.auth`): 401
without a valid token, 403 when its scope is too small. Errors are RFC 9457
`application/problem+json`: 404 unknown id, 409 a transition the domain refuses
(with its reason), 422 invalid input — never a 500 for bad input.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Awaitable, Callable
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Gauge, Histogram, generate_latest

from api.auth import TokenStore
from api.routes import PROBLEMS, ApiProblem, build_router
from domain.errors import InvalidInput, LedgerError, NotFound
from runtime.clock import Clock
from runtime.ledger import Ledger

__all__ = ["create_app", "problem"]


def problem(status: int, title: str, detail: str) -> JSONResponse:
    return JSONResponse({"type": "about:blank", "title": title, "status": status,
                         "detail": detail}, status_code=status,
                        media_type="application/problem+json")


def create_app(ledger: Ledger, tokens: TokenStore, clock: Clock) -> FastAPI:
    app = FastAPI(title="crawl-ledger", version="1", docs_url=None, redoc_url=None,
                  responses={503: PROBLEMS[422] | {"description": "not ready"}})
    lock = threading.RLock()  # one command or query at a time on the ledger's connections
    registry = CollectorRegistry()
    latency = Histogram("crawl_ledger_api_request_seconds", "API request latency",
                        ["method", "route", "status"], registry=registry)
    jobs = Gauge("crawl_ledger_jobs", "jobs by state", ["state"], registry=registry)
    events = Gauge("crawl_ledger_events_total", "events in the event store", registry=registry)
    errors = Counter("crawl_ledger_api_errors_total", "API error responses", ["status"],
                     registry=registry)
    failing = Gauge("crawl_ledger_jobs_failing", "jobs whose last run failed, by reason",
                    ["reason"], registry=registry)

    @app.middleware("http")
    async def timed(request: Request, call_next: Callable[[Request], Awaitable[Response]]
                    ) -> Response:
        started = time.perf_counter()
        response = await call_next(request)
        route = getattr(request.scope.get("route"), "path", "unmatched")
        latency.labels(request.method, route, str(response.status_code)).observe(
            time.perf_counter() - started)
        if response.status_code >= 400:
            errors.labels(str(response.status_code)).inc()
        return response

    @app.exception_handler(LedgerError)
    async def refused(_: Request, error: LedgerError) -> JSONResponse:
        if isinstance(error, NotFound):
            return problem(404, "Not Found", str(error))
        if isinstance(error, InvalidInput):
            return problem(422, "Invalid input", str(error))
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
            with lock:
                head = ledger.source.head()
        except Exception as error:  # noqa: BLE001 - the store is unreachable: not ready
            return problem(503, "Not ready", f"event store unreachable: {type(error).__name__}")
        return {"status": "ready", "head": head}

    @app.get("/metrics", tags=["health"], response_class=Response)
    def metrics() -> Response:
        with lock:
            ledger.catch_up()
            rows = ledger.read.jobs()
            head = ledger.source.head()
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
        events.set(head)
        return Response(generate_latest(registry), media_type=CONTENT_TYPE_LATEST)

    app.include_router(build_router(ledger, tokens, clock, lock), prefix="/api/v1")
    return app
