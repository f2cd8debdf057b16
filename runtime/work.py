"""Running one job: lease, crawl, record — the step every driver uses.

The ledger is synchronous (eventsourcing), the crawler is asyncio: every
ledger call crosses into `DbThread`, so the event loop never blocks on the
database. Long crawls keep their lease alive with a heartbeat; the outcome is
sent as a `RecordResult` (`runtime.results`) naming the worker and its driver.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import time
from dataclasses import dataclass
from typing import Protocol

import structlog

from domain.errors import LedgerError
from domain.recording import Recorded
from domain.values import CrawlOutcome, CrawlTask
from eventstore import unavailable
from runtime import metrics
from runtime.clock import Clock
from runtime.db_thread import DbThread, first_line
from runtime.defaults import DEFAULTS
from runtime.ledger import Ledger
from runtime.results import RecordResult, ResultHandler, worker_origin

__all__ = ["CrawlerPort", "JobWorker", "RunReport", "worker_name"]

log = logging.getLogger(__name__)


class CrawlerPort(Protocol):
    async def crawl(self, task: CrawlTask) -> CrawlOutcome: ...


@dataclass(frozen=True)
class RunReport:
    task: CrawlTask
    outcome: CrawlOutcome
    result: Recorded | None


def worker_name(index: int = 0) -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{index}"


class JobWorker:
    """Leases a job, crawls it and records the outcome (success or failure).

    With `crawl_slots`, the crawl waits for a slot and gives it back before recording:
    a driver running more workers than slots keeps its fetches going while earlier
    results wait for their commit (recording overlaps crawling instead of idling
    the slot for the commit's latency)."""

    def __init__(self, ledger: Ledger, crawler: CrawlerPort, clock: Clock, db: DbThread,
                 name: str, lease_ttl: float = DEFAULTS.lease_ttl,
                 crawl_slots: asyncio.Semaphore | None = None, surface: str = "runner") -> None:
        self.ledger = ledger
        self.crawler = crawler
        self.clock = clock
        self.db = db
        self.name = name
        self.lease_ttl = lease_ttl
        self.crawl_slots = crawl_slots
        #: the driver it runs in (`runner`, `agent`): recorded with each result
        self.surface = surface
        self.results = ResultHandler(ledger.app, db, clock, patience=lease_ttl)

    async def run(self, job_id: str) -> RunReport | None:
        """None when the job could not be leased (taken, paused, cancelled, not due)."""
        app = self.ledger.app
        try:
            task = await self.db.call(app.lease, job_id, self.name, self.lease_ttl,
                                      self.clock.now())
        except LedgerError as refused:
            log.info("job %s not leased: %s", job_id, refused)
            return None
        return await self.run_task(task)

    async def run_task(self, task: CrawlTask) -> RunReport:
        """Crawl an already leased job (keeping its lease alive) and record the outcome.

        Cancelled mid-crawl (a driver shutting down), it releases the lease first. Log
        lines written meanwhile carry the job's, store's, lease's and worker's ids."""
        with structlog.contextvars.bound_contextvars(
                job_id=task.job_id, store_id=task.store_id, lease_id=task.lease_id,
                worker=self.name), metrics.IN_FLIGHT.track_inprogress():
            metrics.LEASES.inc()
            heartbeat = asyncio.create_task(self._heartbeat(task))
            started = time.perf_counter()
            try:
                outcome = await self._crawl(task)
            except asyncio.CancelledError:
                await asyncio.shield(self.release(task, "cancelled while crawling: shutting down"))
                raise
            finally:
                heartbeat.cancel()
            seconds = time.perf_counter() - started
            metrics.FETCH_SECONDS.labels(task.kind).observe(seconds)
            result = await self.results.send(RecordResult(
                task.job_id, task.lease_id, outcome, worker_origin(self.name, self.surface)))
            metrics.observe_outcome(outcome, recorded=result is not None)
            log.info("crawled", extra={
                "url": task.url, "kind": task.kind, "seconds": round(seconds, 3),
                "outcome": "ok" if outcome.ok else getattr(outcome, "error_kind", "failed"),
                "recorded": result is not None,
                "products": result.products if result is not None else 0})
            return RunReport(task, outcome, result)

    async def _crawl(self, task: CrawlTask) -> CrawlOutcome:
        if self.crawl_slots is None:
            return await self.crawler.crawl(task)
        async with self.crawl_slots:
            return await self.crawler.crawl(task)

    async def release(self, task: CrawlTask, reason: str) -> bool:
        """Give a leased job back unfinished (`LeaseReleased`): due again at once."""
        try:
            return await self.db.call(self.ledger.app.release_lease, task.job_id, task.lease_id,
                                      reason, self.clock.now())
        except LedgerError as refused:
            log.warning("job %s not released: %s", task.job_id, refused)
            return False

    async def _heartbeat(self, task: CrawlTask) -> None:
        while True:
            await asyncio.sleep(self.lease_ttl / 3)
            try:
                await self.db.call(self.ledger.app.extend_lease, task.job_id, task.lease_id,
                                   self.lease_ttl, self.clock.now())
            except LedgerError:
                return
            except Exception as error:
                if not unavailable(error):
                    raise
                log.warning("lease of job %s not extended (event store unavailable): %s",
                            task.job_id, first_line(error))


