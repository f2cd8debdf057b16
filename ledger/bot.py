"""The reference bot: a crawl worker that reaches only the HTTP API.

It leases jobs (`POST /api/v1/bot/leases`), fetches each page itself — with the
same politeness (robots.txt, crawl delay, per-host concurrency, backoff) and the
same address guard as a local worker — keeps its leases alive, and submits each raw
page (gzip) or the failure. It has no database and no broker; the server extracts
and records. A crawl of several pages (pagination) goes a page at a time: each
answer names the next request the server's adapter wants, until it wants none.
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
from workers.adapters import REGISTRY
from workers.adapters.base import ExtractionError, Request
from workers.addresses import AddressGuard
from workers.errors import FetchError
from workers.fetch import Fetcher
from workers.http import RobotsFetcher, build_client
from workers.politeness import Politeness, PolitenessConfig

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
            tasks = [CrawlTask.from_payload(lease) for lease in leases]
            await asyncio.gather(*(_work(api, fetcher, politeness, guard, task, ttl, stats)
                                   for task in tasks))


async def _work(api: httpx.AsyncClient, fetcher: Fetcher, politeness: Politeness,
                guard: AddressGuard, task: CrawlTask, ttl: float, stats: BotStats) -> None:
    with structlog.contextvars.bound_contextvars(job_id=task.job_id, store_id=task.store_id,
                                                 lease_id=task.lease_id):
        request: Request | None = None
        try:
            adapter = REGISTRY.for_task(task)
            request = adapter.start(task) if adapter else Request(task.url)
        except ExtractionError as error:  # the job cannot be crawled as it stands
            unreadable: dict[str, Any] = {"job_id": task.job_id, "ok": False,
                                          "error_kind": "parse_error", "message": str(error)}
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
                following = answer.json().get("next")
                if following is None:
                    break
                request = Request(following["url"], following["method"], following.get("json"),
                                  following.get("headers") or {})
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
