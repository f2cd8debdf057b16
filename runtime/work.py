"""Running one job: lease, crawl, record — the step every driver uses.

The ledger is synchronous (eventsourcing), the crawler is asyncio: every
ledger call crosses into `DbThread`, so the event loop never blocks on the
database. Long crawls keep their lease alive with a heartbeat.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import socket
import time
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol, TypeVar

import structlog

from domain.application import CrawlLedger
from domain.errors import LeaseLost, LedgerError
from domain.recording import Recorded, Recording
from domain.values import CrawlFailure, CrawlOutcome, CrawlTask
from eventstore import unavailable
from runtime import metrics
from runtime.clock import Clock
from runtime.defaults import DEFAULTS
from runtime.ledger import Ledger

log = logging.getLogger(__name__)
T = TypeVar("T")


class CrawlerPort(Protocol):
    async def crawl(self, task: CrawlTask) -> CrawlOutcome: ...


class DbThread:
    """Runs ledger calls on dedicated threads (one for SQLite: it has one writer)."""

    def __init__(self, threads: int = 1) -> None:
        self.threads = threads
        self.pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="ledger-db")
        self._groups: dict[int, GroupCommit] = {}

    async def call(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self.pool, functools.partial(fn, *args, **kwargs))

    def group_commit(self, app: CrawlLedger) -> GroupCommit:
        """The one `GroupCommit` of `app` on these threads (shared by every worker)."""
        if id(app) not in self._groups:
            self._groups[id(app)] = GroupCommit(app, self)
        return self._groups[id(app)]

    def close(self) -> None:
        self.pool.shutdown(wait=True)


class GroupCommit:
    """Records crawl results in groups: every result waiting when the database thread
    is free goes into one `CrawlLedger.record_many` call (one transaction; see
    `domain.recording`), at most `GROUP` at a time. Under load the groups grow, so
    throughput grows with load instead of latency; alone, a result is recorded at once.
    Each caller gets its own result or its own error."""

    GROUP = 64

    def __init__(self, app: CrawlLedger, db: DbThread) -> None:
        self.app, self.db = app, db
        self.waiting: list[tuple[Recording, asyncio.Future[Recorded]]] = []
        self.flushing = 0
        self._tasks: set[asyncio.Task[None]] = set()

    async def record(self, job_id: str, lease_id: str, outcome: CrawlOutcome,
                     now: datetime) -> Recorded:
        done: asyncio.Future[Recorded] = asyncio.get_running_loop().create_future()
        self.waiting.append((Recording(job_id, lease_id, outcome, now), done))
        if self.flushing < self.db.threads:
            self.flushing += 1
            task = asyncio.create_task(self._flush())  # not cancelled with one caller
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        return await done

    async def _flush(self) -> None:
        try:
            while self.waiting:
                group, self.waiting = self.waiting[:self.GROUP], self.waiting[self.GROUP:]
                try:
                    answers = await self.db.call(self.app.record_many, [r for r, _ in group])
                except BaseException as error:  # noqa: BLE001 - every caller of the group sees it
                    for _, done in group:
                        if not done.done():
                            done.set_exception(error)
                    if isinstance(error, asyncio.CancelledError):
                        raise
                    continue
                metrics.GROUP_SIZE.observe(len(group))
                for (_, done), answer in zip(group, answers):
                    if done.done():
                        continue
                    if isinstance(answer, Exception):
                        done.set_exception(answer)
                    else:
                        done.set_result(answer)
        finally:
            self.flushing -= 1


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
                 crawl_slots: asyncio.Semaphore | None = None) -> None:
        self.ledger = ledger
        self.crawler = crawler
        self.clock = clock
        self.db = db
        self.name = name
        self.lease_ttl = lease_ttl
        self.crawl_slots = crawl_slots

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
            result = await self._record(task, outcome)
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

    async def _record(self, task: CrawlTask, outcome: CrawlOutcome) -> Recorded | None:
        app = self.ledger.app
        group = self.db.group_commit(app)
        try:
            return await retrying_while_unavailable(
                lambda: group.record(task.job_id, task.lease_id, outcome, self.clock.now()),
                f"recording job {task.job_id}", patience=self.lease_ttl)
        except LeaseLost as lost:  # the lease expired and was reaped (or cancelled) meanwhile
            log.warning("result of job %s not recorded: %s", task.job_id, lost)
            return None
        except LedgerError as refused:
            if not outcome.ok:
                raise
            # the result itself was refused: end the attempt as a failure rather than
            # leaving the job leased until its lease runs out
            log.error("result of job %s refused: %s", task.job_id, refused)
            failure = CrawlFailure("worker_error", f"result refused: {refused}", retryable=True)
            return await self.db.call(app.record_failure, task.job_id, task.lease_id, failure,
                                      self.clock.now())

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


def first_line(error: BaseException) -> str:
    return (str(error).strip().splitlines() or [type(error).__name__])[0]


async def retrying_while_unavailable(call: Callable[[], Awaitable[T]], what: str,
                                     patience: float) -> T:
    """`await call()`, again (with backoff: 0.5 s doubling to 10 s) while the event store
    is unavailable (`eventstore.unavailable`), for up to `patience` seconds.

    Recording twice is safe: a result already recorded under its lease records nothing."""
    loop = asyncio.get_running_loop()
    give_up, delay = loop.time() + patience, 0.5
    while True:
        try:
            return await call()
        except Exception as error:
            if not unavailable(error) or loop.time() + delay > give_up:
                raise
            log.warning("%s: event store unavailable (%s); retrying in %.1fs",
                        what, first_line(error), delay)
        await asyncio.sleep(delay)
        delay = min(delay * 2, 10.0)
