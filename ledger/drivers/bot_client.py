"""The reference bot: a crawl worker that reaches only the HTTP API.

It leases jobs (`POST /api/v1/bot/leases`), fetches each page itself — with the
same politeness (robots.txt, crawl delay, per-host concurrency, backoff) and the
same address guard as a local worker — keeps its leases alive, and submits each raw
page (gzip) or the failure. It has no database, no broker and no adapters: the
server chooses the requests, extracts and records. Each lease names the request to
fetch first, each answer the next one the server's adapter wants (pagination),
until it wants none.
"""

from __future__ import annotations

import asyncio
import base64
import gzip
import logging
import os
import socket
import time
from dataclasses import dataclass
from typing import Any

import httpx
import structlog

from domain.values import CrawlTask
from workers.extraction.adapters.base import Request
from workers.fetching.addresses import AddressGuard
from workers.fetching.fetch import Fetcher
from workers.fetching.fetch_errors import FetchError
from workers.fetching.http import RobotsFetcher, build_client
from workers.fetching.politeness import Politeness, PolitenessConfig

__all__ = ["BotStats", "run_bot"]

log = logging.getLogger(__name__)


@dataclass
class BotStats:
    leased: int = 0
    submitted: int = 0
    failed: int = 0
    lost: int = 0


async def run_bot(server: str, token: str, name: str, concurrency: int, guard: AddressGuard,
                  user_agent: str, until_idle: bool = False) -> BotStats:
    stats = BotStats()
    structlog.contextvars.bind_contextvars(worker=f"bot:{name}")
    headers = {"Authorization": f"Bearer {token}"}
    async with httpx.AsyncClient(base_url=server.rstrip("/"), headers=headers,
                                 timeout=60) as api, \
            build_client(guard=guard, user_agent=user_agent) as web:
        politeness = Politeness(RobotsFetcher.on(web, guard), time.monotonic, asyncio.sleep,
                                PolitenessConfig(user_agent=user_agent))
        fetcher = Fetcher(web, guard=guard)
        idle = 0
        while True:
            answer = await api.post("/api/v1/bot/leases", json={
                "worker": name, "max": concurrency, "host": socket.gethostname(),
                "pid": os.getpid()})
            answer.raise_for_status()
            leases, ttl = answer.json()["leases"], float(answer.json()["ttl"])
            if not leases:
                idle += 1
                if until_idle and idle >= 3:
                    await api.post("/api/v1/bot/depart", json={"worker": name,
                                                                "reason": "idle"})
                    return stats
                await asyncio.sleep(0.3 if until_idle else 2.0)
                continue
            idle = 0
            stats.leased += len(leases)
            await asyncio.gather(*(_work(api, fetcher, politeness, guard,
                                         CrawlTask.from_payload(lease), _request(lease["request"]),
                                         ttl, stats) for lease in leases))


def _request(sent: dict[str, Any] | None) -> Request | None:
    """A request the server handed out (a lease's first, an answer's next)."""
    if sent is None:
        return None
    return Request(sent["url"], sent["method"], sent.get("json"), sent.get("headers") or {})


async def _work(api: httpx.AsyncClient, fetcher: Fetcher, politeness: Politeness,
                guard: AddressGuard, task: CrawlTask, request: Request | None, ttl: float,
                stats: BotStats) -> None:
    with structlog.contextvars.bound_contextvars(job_id=task.job_id, store_id=task.store_id,
                                                 lease_id=task.lease_id):
        # no first request: the job cannot be crawled as it stands (the server says why)
        unreadable: dict[str, Any] = {"job_id": task.job_id, "ok": False,
                                      "error_kind": "parse_error",
                                      "message": "the server named no request to fetch"}
        beat = asyncio.create_task(_heartbeat(api, task, ttl))
        try:
            page = 0
            while True:  # the server asks for each next page it wants
                result = (unreadable if request is None
                          else await _fetch(fetcher, politeness, guard, task, request))
                answer = await api.post(f"/api/v1/bot/leases/{task.lease_id}/result",
                                        json={**result, "page": page})
                if answer.status_code == 409:
                    stats.lost += 1
                    log.warning("job %s: lease lost before the result was in: %s", task.job_id,
                                answer.json().get("detail"))
                    return
                answer.raise_for_status()
                request = _request(answer.json().get("next"))
                if request is None:
                    break
                page += 1
        finally:
            beat.cancel()
        stats.submitted += 1
        stats.failed += not result["ok"]
        log.info("submitted", extra={"url": task.url, "ok": result["ok"],
                                     "error_kind": result.get("error_kind"),
                                     "seconds": round(result.get("duration", 0.0), 3)})


async def _fetch(fetcher: Fetcher, politeness: Politeness, guard: AddressGuard,
                 task: CrawlTask, request: Request) -> dict[str, Any]:
    started = time.monotonic()
    try:
        await guard.check(request.url, request.method)
        page = await fetcher.fetch(request, politeness.user_agent(task.policy),
                                   lambda url: politeness.slot(url, task.policy))
    except FetchError as error:
        return {"job_id": task.job_id, "ok": False, "error_kind": error.kind,
                "message": error.message, "http_status": error.http_status,
                "retry_after": error.retry_after, "duration": time.monotonic() - started}
    packed = base64.b64encode(gzip.compress(page.body, 6)).decode()
    return {"job_id": task.job_id, "ok": True, "http_status": page.status,
            "final_url": page.url, "content_type": page.content_type,
            "body_gzip_b64": packed, "duration": time.monotonic() - started}


async def _heartbeat(api: httpx.AsyncClient, task: CrawlTask, ttl: float) -> None:
    while True:
        await asyncio.sleep(ttl / 3)
        await api.post(f"/api/v1/bot/leases/{task.lease_id}/heartbeat",
                       json={"job_id": task.job_id})
