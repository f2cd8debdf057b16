"""The bot API: remote workers that reach only the API pull work and push results.

    POST /api/v1/bot/leases                      {"worker", "max"} -> leased tasks, TTL, lag
    POST /api/v1/bot/leases/{lease}/heartbeat    {"job_id"}        -> the lease extended
    POST /api/v1/bot/leases/{lease}/result       {"job_id", "ok", …, "body_gzip_b64"}
    POST /api/v1/bot/depart                      {"worker", "reason"}  -> leaves the registry

Each lease names the request to fetch first; each answer to a page the next one the
adapter wants (`next`), until the crawl is complete. The server archives each page,
reads it and records the result exactly as a local worker would (`runtime.remote`,
a `SubmitPage`, then a `RecordResult` whose actor is the bot's token). A retried
submit records nothing twice; an expired lease answers 409 and its job is back in
the queue. Only `bot` tokens, each acting only for the worker names it leased as
first (`ledger.tables.worker_owners`), and for the current leases of those workers;
for another's: 403. Leasing reads the read models like every read and projects
nothing; the answer says how far behind they were (`lag`, `X-Ledger-Lag`).
"""

from __future__ import annotations

import asyncio
import base64
import binascii
from collections.abc import Callable
from typing import Any

from fastapi import APIRouter, Depends, Response
from pydantic import BaseModel, Field, field_validator

from api.auth import Token
from api.consistency import LAG_HEADER
from domain.errors import Forbidden
from domain.urls import url_refusal
from runtime.clock import Clock
from runtime.commands import token_origin
from runtime.defaults import DEFAULTS
from runtime.heartbeats import Heartbeats, register
from runtime.remote import BotPages, Request, SubmitPage, Submitted, ungzip

__all__ = ["RESULT_MAX_BYTES", "build_bot_router"]

#: the largest result a bot submits: the page (`body_gzip_b64`, at most 12 MiB) and the rest
RESULT_MAX_BYTES = 13 << 20


class LeaseRequest(BaseModel):
    worker: str = Field(min_length=1, max_length=200)
    max: int = Field(default=1, ge=1, le=64)
    host: str = Field(default="", max_length=255)
    pid: int = Field(default=0, ge=0, le=2**31)
    in_flight: int = Field(default=0, ge=0, le=10_000)


class Departure(BaseModel):
    worker: str = Field(min_length=1, max_length=200)
    reason: str = Field(default="stopped", min_length=1, max_length=200)


class Heartbeat(BaseModel):
    job_id: str = Field(min_length=1, max_length=64)


class Result(BaseModel):
    job_id: str = Field(min_length=1, max_length=64)
    ok: bool
    http_status: int | None = Field(default=None, ge=100, le=599)
    final_url: str | None = Field(default=None, max_length=4000)
    content_type: str = Field(default="", max_length=300)
    #: the raw page, gzip, base64 (at most 8 MiB once decompressed)
    body_gzip_b64: str | None = Field(default=None, max_length=12 * 1024 * 1024)
    error_kind: str | None = Field(default=None, max_length=40)
    message: str = Field(default="", max_length=2000)
    retry_after: float | None = Field(default=None, ge=0, le=86400, allow_inf_nan=False)
    duration: float = Field(default=0.0, ge=0, le=86400, allow_inf_nan=False)
    #: which page of the crawl this is: 0, then each `next` the answers asked for
    page: int = Field(default=0, ge=0, le=10_000)

    @field_validator("final_url")
    @classmethod
    def _an_http_url(cls, url: str | None) -> str | None:
        reason = None if url is None else url_refusal(url)
        if reason is not None:
            raise ValueError(f"bad URL: {reason}")
        return url


class NextRequest(BaseModel):
    """The next page the adapter wants fetched (then submitted with `page` + 1)."""

    url: str
    method: str
    json_body: dict[str, Any] | None = Field(default=None, alias="json")
    headers: dict[str, str]


class Submit(BaseModel):
    job_id: str
    duplicate: bool
    events: int
    products: int
    #: null: the crawl is recorded; else fetch this and submit it as the next page
    next: NextRequest | None = None


def build_bot_router(pages: BotPages, clock: Clock, bot: Callable[..., Token],
                     heartbeats: Heartbeats, ttl: float = DEFAULTS.lease_ttl) -> APIRouter:
    """The bot routes: every ledger call runs on the bot path's own database thread
    (`BotPages.db`), so they need no lock of the API's."""
    router = APIRouter(prefix="/bot", tags=["bot"])
    ledger = pages.ledger
    owners = ledger.tables.worker_owners
    #: the bot token of the request (a default, not `Annotated`: `bot` is no module global)
    acting_bot = Depends(bot)

    def refuse_others(name: str, token: Token, owned: Callable[[str, str], bool]) -> None:
        if not owned(name, token.token_id):
            raise Forbidden(f"worker {name!r} is not this token's ({token.token_id}): a bot "
                            "token acts only for the worker names it leased as")

    def refuse_others_lease(job_id: str, lease_id: str, token: Token) -> None:
        """A current lease is its worker's; a stale one goes on to be refused (409)."""
        job = ledger.app.get_job(job_id)
        if job.lease_id == lease_id and job.worker is not None:
            refuse_others(job.worker, token, owners.owns)

    def join(name: str, body: LeaseRequest, token: Token) -> None:
        refuse_others(name, token, owners.claim)
        register(ledger, name, "bot", body.max, ["all"], clock.now(),  # once per name
                 host=body.host or "unknown", pid=body.pid)
        heartbeats.beat(name, body.in_flight, clock.now())

    @router.post("/leases")
    async def lease(body: LeaseRequest, response: Response,
                    token: Token = acting_bot) -> dict[str, Any]:
        """Leased jobs, each with the request to fetch first (`request`), chosen from the
        read models as they are; `lag` (and `X-Ledger-Lag`): the events they had still
        to apply."""
        name = f"bot:{body.worker}"
        await pages.db.call(join, name, body, token)
        leased = await pages.lease(name, ttl, body.max)
        response.headers[LAG_HEADER] = str(leased.lag)
        return {"ttl": ttl, "lag": leased.lag,
                "leases": [{**lease.task.to_payload(), "request": _request(lease.request)}
                           for lease in leased.leases]}

    @router.post("/depart")
    async def depart(body: Departure, token: Token = acting_bot) -> dict[str, Any]:
        """The bot stops: it leaves the worker registry (an event)."""
        def leave() -> None:
            refuse_others(f"bot:{body.worker}", token, owners.owns)
            ledger.app.depart_worker(f"bot:{body.worker}", body.reason, clock.now())
        await pages.db.call(leave)
        return {"worker": body.worker, "departed": True}

    @router.post("/leases/{lease_id}/heartbeat")
    async def heartbeat(lease_id: str, body: Heartbeat,
                        token: Token = acting_bot) -> dict[str, Any]:
        def extend() -> None:
            refuse_others_lease(body.job_id, lease_id, token)
            ledger.app.extend_lease(body.job_id, lease_id, ttl, clock.now())
        await pages.db.call(extend)
        return {"lease_id": lease_id, "ttl": ttl}

    @router.post("/leases/{lease_id}/result", response_model=Submit,
                 response_model_by_alias=True)
    async def result(lease_id: str, body: Result, token: Token = acting_bot) -> Any:
        await pages.db.call(refuse_others_lease, body.job_id, lease_id, token)
        page = await asyncio.to_thread(_unpacked, body) if body.ok else b""
        sent = Submitted(body.ok, body.http_status, body.final_url, body.content_type, page,
                         body.error_kind, body.message, body.retry_after, body.duration)
        answer = await pages.send(SubmitPage(body.job_id, lease_id, sent, body.page,
                                             token_origin(token.name, token.scope, "bot")))
        if answer.next is not None:
            return {"job_id": body.job_id, "duplicate": False, "events": 0, "products": 0,
                    "next": _request(answer.next)}
        recorded = answer.recorded
        assert recorded is not None
        return {"job_id": recorded.job_id, "duplicate": recorded.duplicate,
                "events": recorded.events, "products": recorded.products, "next": None}

    return router


def _unpacked(body: Result) -> bytes:
    """The submitted page's bytes (decoded and decompressed: CPU, off the event loop)."""
    if body.body_gzip_b64 is None:
        raise ValueError("a successful result needs body_gzip_b64 (the raw page)")
    try:
        return ungzip(base64.b64decode(body.body_gzip_b64, validate=True))
    except binascii.Error:
        raise ValueError("body_gzip_b64 is not base64") from None


def _request(request: Request | None) -> dict[str, Any] | None:
    if request is None:
        return None
    return {"url": request.url, "method": request.method,
            "json": dict(request.json) if request.json is not None else None,
            "headers": dict(request.headers)}
