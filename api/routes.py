"""The /api/v1 resources: stores, jobs (and their control), products, events.

Reads take no lock and read the read models as the projector left them (list
endpoints carry the lag, `api.consistency`); writes go through `Writes`."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from decimal import Decimal
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Header, Query, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse, StreamingResponse
from pydantic import AwareDatetime, BaseModel, Field

from api.alert_routes import AlertSender, build_alerts_router
from api.auth import Token, TokenStore, allows
from api.bot import build_bot_router
from api.consistency import Writes, lag_headers
from api.proxy_routes import build_proxies_router
from api.schedule import build_schedule_router
from api.sessions import COOKIE, Sessions
from domain.crawl_job import RetryPolicy
from domain.envelope import Envelope
from domain.values import JOB_KINDS
from projections.queries import JOB_STATES
from runtime.as_of import job_as_of, product_as_of
from runtime.clock import Clock
from runtime.commands import (
    JOB_CONTROLS,
    Command,
    DisableStore,
    EnableStore,
    Origin,
    RequeueDead,
    ScheduleJob,
    token_origin,
)
from runtime.defaults import DEFAULTS
from runtime.heartbeats import Heartbeats, registry
from runtime.history import stream_history
from runtime.ledger import Ledger
from runtime.proxy_pool import AddressGuard
from runtime.remote import BotPages
from runtime.slots import place, planned_jobs

__all__ = ["ApiProblem", "build_router", "requirement"]

#: the largest log position a request may name (SQLite and PostgreSQL integers are 64-bit)
__all__ = ["PROBLEMS", "AlertSender", "ApiProblem", "build_router", "requirement"]

POSITIONS = 2**62
Action = Literal["pause", "resume", "cancel", "retry", "force-run", "reopen"]


class Problem(BaseModel):
    """RFC 9457 problem details."""

    type: str = "about:blank"
    title: str
    status: int
    detail: str


_PROBLEM = {"content": {"application/problem+json": {"schema": Problem.model_json_schema()}},
            "description": "RFC 9457 problem details"}
#: every operation may answer these (documented, so clients and schema checks know them)
PROBLEMS: dict[int | str, dict[str, Any]] = {
    code: dict(_PROBLEM, description=text) for code, text in (
        (401, "no valid token"), (403, "scope too small"), (404, "unknown id"),
        (409, "refused by the domain"), (422, "invalid input"))}


#: `?as_of=`: the aggregate as the ledger knew it at this recorded time (ISO 8601 with
#: a zone), its events up to then
AsOf = Annotated[AwareDatetime | None, Query(description=(
    "ISO 8601 time with a zone: the state and events as the ledger knew them then"))]


class ApiProblem(Exception):
    def __init__(self, status: int, title: str, detail: str) -> None:
        super().__init__(detail)
        self.status, self.title, self.detail = status, title, detail


class StoreIn(BaseModel):
    name: str = Field(min_length=1, max_length=200)
    base_url: str = Field(min_length=1, max_length=2000)
    platform: str = Field(min_length=1, max_length=40)
    crawl_delay: float | None = Field(default=None, ge=0, le=3600, allow_inf_nan=False)
    max_concurrency: int | None = Field(default=None, ge=1, le=64)


class Reason(BaseModel):
    reason: str = Field(min_length=1, max_length=500)


class JobIn(BaseModel):
    kind: Literal["store_discovery", "entry_point", "catalog", "product_page", "feed"]
    url: str = Field(min_length=1, max_length=2000)
    store_id: str | None = None
    every_seconds: int | None = Field(default=4 * 3600, ge=60, le=90 * 86400)
    priority: int = Field(default=0, ge=-1000, le=1000)
    max_attempts: int = Field(default=3, ge=1, le=100)
    #: first run in the least-loaded 15-minute slot within one interval (default: now)
    spread: bool = False


class BulkActions(BaseModel):
    action: Action
    ids: list[str] = Field(min_length=1, max_length=1000)
    reason: str | None = Field(default=None, max_length=500)


def _plain(value: Any) -> Any:
    if isinstance(value, Decimal):
        return format(value, "f")
    return str(value)


class _Json(JSONResponse):
    """JSONResponse's encoding (compact, UTF-8, no NaN) with money as decimal strings,
    in one pass over the content."""

    def render(self, content: Any) -> bytes:
        return json.dumps(content, default=_plain, ensure_ascii=False, allow_nan=False,
                          separators=(",", ":")).encode("utf-8")


def reply(content: Any, status: int = 200, headers: dict[str, str] | None = None
          ) -> JSONResponse:
    """JSON with money as decimal strings, never floats."""
    return _Json(content, status_code=status, headers=headers)


def _event(env: Envelope) -> dict[str, Any]:
    """`Envelope.to_dict()` for serialising only: the fields, without copying the payload
    (`asdict` deep-copies it: ~40 µs an event)."""
    return {k: v for k, v in env.__dict__.items() if v is not None or k != "ledger_id"}


def requirement(tokens: TokenStore, sessions: Sessions | None = None
                ) -> Callable[[str], Callable[..., Token]]:
    """`require(scope)`: a dependency admitting a bearer token of at least that scope, or
    (without an Authorization header) the dashboard's session cookie."""
    def signed_in(request: Request) -> Token | None:
        """The dashboard's session cookie; a change also needs its CSRF header."""
        found = sessions.get(request.cookies.get(COOKIE)) if sessions else None
        if found is None:
            return None
        session, token = found
        if request.method not in ("GET", "HEAD") and not Sessions.csrf_ok(
                session, request.headers.get("x-csrf-token")):
            raise ApiProblem(403, "Forbidden", "a change made with the session cookie needs "
                                               "its X-CSRF-Token header")
        return token

    def require(needed: str) -> Callable[..., Token]:
        def check(request: Request, authorization: Annotated[str | None, Header()] = None
                  ) -> Token:
            scheme, _, secret = (authorization or "").partition(" ")
            token = tokens.verify(secret.strip()) if scheme.lower() == "bearer" else None
            if token is None and not authorization:
                token = signed_in(request)
            if token is None:
                raise ApiProblem(401, "Unauthorized", "a valid bearer token is required")
            if not allows(token.scope, needed):
                raise ApiProblem(403, "Forbidden",
                                 f"a {token.scope} token cannot do this (needs {needed})")
            return token
        return check

    return require


def build_router(ledger: Ledger, tokens: TokenStore, clock: Clock,
                 writes: Writes, lease_ttl: float = DEFAULTS.lease_ttl,
                 sessions: Sessions | None = None,
                 alert_sender: AlertSender | None = None,
                 proxy_guard: AddressGuard | None = None,
                 bot_pages: BotPages | None = None) -> APIRouter:
    router = APIRouter(responses=PROBLEMS)

    require = requirement(tokens, sessions)
    read, operate = Depends(require("read")), Depends(require("operate"))
    if bot_pages is not None:
        router.include_router(build_bot_router(bot_pages, clock, require("bot"),
                                               Heartbeats(ledger.tables.heartbeats), lease_ttl))
    router.include_router(build_schedule_router(ledger, clock, writes, require("read"),
                                                require("operate")))
    router.include_router(build_alerts_router(ledger, clock, writes, require("read"),
                                              require("operate"), alert_sender))
    router.include_router(build_proxies_router(ledger, clock, writes, require("read"),
                                               require("operate"), proxy_guard))

    def write(function: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        with writes:
            return function(*args, **kwargs)

    def send(command: Command) -> Any:
        return write(ledger.commands.send, command, clock.now())

    def by(token: Token, reason: str | None) -> Origin:
        return token_origin(token.name, token.scope, "api", reason)

    # stores ------------------------------------------------------------------------
    @router.get("/stores", dependencies=[read], tags=["stores"])
    def list_stores() -> JSONResponse:
        return reply(ledger.read.stores(), headers=lag_headers(ledger))

    @router.post("/stores", dependencies=[operate], status_code=201, tags=["stores"])
    def create_store(body: StoreIn) -> JSONResponse:
        store_id = write(ledger.app.register_store, name=body.name, base_url=body.base_url,
                        platform=body.platform, now=clock.now(), crawl_delay=body.crawl_delay,
                        max_concurrency=body.max_concurrency)
        return reply({"id": str(store_id)}, 201)

    @router.get("/stores/{store_id}", dependencies=[read], tags=["stores"])
    def show_store(store_id: str) -> JSONResponse:
        store = ledger.app.get_store(store_id)
        row = next((r for r in ledger.read.stores() if r["store_id"] == str(store.id)), None)
        return reply({"id": str(store.id), "status": row})

    @router.post("/stores/{store_id}/disable", tags=["stores"])
    def disable_store(store_id: str, body: Reason, token: Token = operate
                      ) -> JSONResponse:
        send(DisableStore(store_id, by(token, body.reason)))
        return reply({"id": store_id, "enabled": False})

    @router.post("/stores/{store_id}/enable", tags=["stores"])
    def enable_store(store_id: str, token: Token = operate,
                     reason: Annotated[str | None, Query(max_length=500)] = None
                     ) -> JSONResponse:
        send(EnableStore(store_id, by(token, reason)))
        return reply({"id": store_id, "enabled": True})

    # jobs --------------------------------------------------------------------------
    @router.get("/jobs", dependencies=[read], tags=["jobs"])
    def list_jobs(state: str | None = None, store: str | None = None, kind: str | None = None,
                  cursor: str | None = None,
                  limit: Annotated[int, Query(ge=1, le=1000)] = 100) -> JSONResponse:
        if state is not None and state not in JOB_STATES:
            raise ApiProblem(422, "Unprocessable Entity",
                             f"unknown state {state!r}; expected one of {', '.join(JOB_STATES)}")
        if kind is not None and kind not in JOB_KINDS:
            raise ApiProblem(422, "Unprocessable Entity",
                             f"unknown kind {kind!r}; expected one of {', '.join(JOB_KINDS)}")
        headers = lag_headers(ledger)  # before the read: the lag it may show, at most
        page, following = ledger.read.job_page(state=state, store_id=store, kind=kind,
                                               after=cursor, limit=limit)
        return reply({"items": page, "next_cursor": following}, headers=headers)

    @router.post("/jobs", status_code=201, tags=["jobs"])
    def schedule_job(body: JobIn, token: Token = operate,
                     reason: Annotated[str | None, Query(max_length=500)] = None
                     ) -> JSONResponse:
        """Schedule a job (201), or reopen the job of this kind and URL if it is cancelled,
        completed or dead (200, `reopened: true`, its `Reopened` event records the token)."""
        now, every = clock.now(), body.every_seconds
        start = place(planned_jobs(ledger), every, now) if body.spread and every else None
        done = write(ledger.commands.send, ScheduleJob(
            kind=body.kind, url=body.url, origin=by(token, reason), store_id=body.store_id,
            every=body.every_seconds, priority=body.priority,
            retry_policy=RetryPolicy(max_attempts=body.max_attempts), start_at=start), now)
        return reply({"id": str(done.job_id), "reopened": done.reopened},
                     200 if done.reopened else 201)

    @router.get("/jobs/{job_id}", dependencies=[read], tags=["jobs"])
    def show_job(job_id: str, as_of: AsOf = None) -> JSONResponse:
        job = ledger.app.get_job(job_id)
        if as_of is not None:
            return reply(job_as_of(ledger, job, as_of))
        headers = lag_headers(ledger)
        history = stream_history(ledger, job.id)
        return reply({"id": str(job.id), "status": ledger.read.job(str(job.id)),
                      "nonretryable_failures": job.nonretryable_failures,
                      "events": [_event(e) for e in history]}, headers=headers)

    @router.post("/jobs/actions", tags=["jobs"])
    def bulk(body: BulkActions, token: Token = operate) -> JSONResponse:
        results = []
        for job_id in body.ids:
            try:
                send(JOB_CONTROLS[body.action](job_id, by(token, body.reason)))
                results.append({"id": job_id, "ok": True})
            except Exception as error:  # noqa: BLE001 - each id reports its own refusal
                results.append({"id": job_id, "ok": False, "error": str(error)})
        return reply({"action": body.action, "results": results})

    @router.post("/jobs/requeue-dead", tags=["jobs"])
    def requeue_dead(token: Token = operate,
                     reason: Annotated[str | None, Query(max_length=500)] = None
                     ) -> JSONResponse:
        writes.settle()  # the dead jobs the read models know of, this server's writes included
        dead = [r["job_id"] for r in ledger.read.jobs(state="dead")]
        return reply({"requeued": [str(j) for j in send(RequeueDead(dead, by(token, reason)))]})

    @router.post("/jobs/{job_id}/{action}", tags=["jobs"])
    def control(job_id: str, action: Action, token: Token = operate,
                reason: Annotated[str | None, Query(max_length=500)] = None) -> JSONResponse:
        """Pause, resume, cancel, retry, force-run or reopen the job; the event records the
        token's name and scope as its actor, `api` as its surface, and `reason`."""
        send(JOB_CONTROLS[action](job_id, by(token, reason)))
        return reply({"id": job_id, "state": ledger.app.get_job(job_id).state})

    # products ----------------------------------------------------------------------
    @router.get("/products", dependencies=[read], tags=["products"])
    def list_products(store: str | None = None, out_of_stock: bool = False,
                      min_price: Decimal | None = None, max_price: Decimal | None = None,
                      cursor: str | None = None,
                      limit: Annotated[int, Query(ge=1, le=1000)] = 100,
                      q: Annotated[str | None, Query(max_length=200)] = None) -> JSONResponse:
        """Products in id order, a page at a time: follow `next_cursor` (null on the
        last page); a page filtered by price may hold fewer than `limit` items.

        With `q`: full-text search over name, brand, category, store name and
        description (every word, the last as a prefix), best match first: at most
        `limit` items, no cursor (`next_cursor` null); `store` still applies."""
        for bound in (min_price, max_price):
            if bound is not None and (not bound.is_finite() or abs(bound) > 10**12):
                raise ValueError(f"price bound {bound} must be a finite amount")
        headers = lag_headers(ledger)
        if q is not None:
            if cursor is not None or out_of_stock or min_price is not None \
                    or max_price is not None:
                raise ValueError("q combines with store and limit only")
            found = ledger.read.search_products(q, store_id=store, limit=limit)
            return reply({"items": found, "next_cursor": None}, headers=headers)
        page, following = ledger.read.product_page(store_id=store, out_of_stock=out_of_stock,
                                                   min_price=min_price, max_price=max_price,
                                                   after=cursor, limit=limit)
        return reply({"items": page, "next_cursor": following}, headers=headers)

    @router.get("/products/{product_id}", dependencies=[read], tags=["products"])
    def show_product(product_id: str, as_of: AsOf = None) -> JSONResponse:
        product = ledger.app.get_product(product_id)
        if as_of is not None:
            return reply(product_as_of(ledger, product, as_of))
        return reply({"id": str(product.id), "status": ledger.read.product(str(product.id))},
                     headers=lag_headers(ledger))

    @router.get("/products/{product_id}/history", dependencies=[read], tags=["products"])
    def product_history(product_id: str) -> JSONResponse:
        product = ledger.app.get_product(product_id)
        return reply({"id": str(product.id),
                      "events": [_event(e) for e in stream_history(ledger, product.id)]})

    # workers -----------------------------------------------------------------------
    heartbeats = Heartbeats(ledger.tables.heartbeats)

    @router.get("/workers", dependencies=[read], tags=["workers"])
    def workers() -> JSONResponse:
        """Every registered worker: driver, host, pid, concurrency, last heartbeat
        (in flight, memory, CPU) and its state: alive, stale (three heartbeats missed)
        or departed."""
        return reply({"items": registry(ledger, heartbeats, clock.now())},
                     headers=lag_headers(ledger))

    # events ------------------------------------------------------------------------
    @router.get("/events", dependencies=[read], tags=["events"])
    def events(after: Annotated[int, Query(ge=0, le=POSITIONS)] = 0,
               limit: Annotated[int, Query(ge=1, le=5000)] = 500) -> JSONResponse:
        return reply({"items": [_event(e) for e in ledger.source.read(after, limit)]})

    @router.get("/events/stream", dependencies=[read], tags=["events"])
    async def stream(request: Request, after: Annotated[int, Query(ge=0, le=POSITIONS)] = 0,
                     named: bool = True,
                     last_event_id: Annotated[str | None, Header()] = None) -> StreamingResponse:
        """Every event after `after` (or `Last-Event-ID`), then each new one as it is
        recorded. Each message's SSE `event` is the event type (`named=false`: plain
        messages, for a client that listens to all types at once)."""
        start = _position(last_event_id, after)
        return _sse(request, start, lambda env: True, named)

    @router.get("/jobs/{job_id}/events/stream", dependencies=[read], tags=["events"])
    async def job_stream(request: Request, job_id: str,
                         after: Annotated[int, Query(ge=0, le=POSITIONS)] = 0,
                         named: bool = True,
                         last_event_id: Annotated[str | None, Header()] = None
                         ) -> StreamingResponse:
        """One job's events after `after` (or `Last-Event-ID`): its live log."""
        job = await run_in_threadpool(ledger.app.get_job, job_id)
        start = _position(last_event_id, after)
        return _sse(request, start, lambda env: str(env.stream_id) == str(job.id), named)

    def _sse(request: Request, start: int, wanted: Callable[[Envelope], bool],
             named: bool = True) -> StreamingResponse:
        async def lines() -> AsyncIterator[str]:
            position = start
            yield ": stream open\n\n"
            while not await request.is_disconnected():
                found = await run_in_threadpool(ledger.source.read, position, 500)
                for env in found:
                    position = env.position
                    if wanted(env):
                        data = json.dumps(_event(env), default=_plain)
                        kind = f"event: {env.event_type}\n" if named else ""
                        yield f"id: {env.position}\n{kind}data: {data}\n\n"
                if len(found) < 500:
                    await asyncio.sleep(0.1)
        return StreamingResponse(lines(), media_type="text/event-stream",
                                 headers={"Cache-Control": "no-cache"})

    return router


def _position(last_event_id: str | None, default: int) -> int:
    """Where a (resumed) stream starts: after its Last-Event-ID, when it is a position."""
    if last_event_id and last_event_id.isdigit() and len(last_event_id) <= 18:
        return int(last_event_id)
    return default

