"""Remote workers (bots behind NAT): lease work for them, read and record what they fetched.

A bot only fetches. Each lease hands it the job's first request; each page it
submits (`SubmitPage`) is archived and read by the deployment's `PageReader` — the
same adapter choice, extraction, pagination limits and failure taxonomy as a local
crawl (`workers.crawl_pages`) — and answered with the next request the adapter wants,
so a bot crawls every page of a paginated catalog. When the crawl is complete (or
failed) its outcome goes as a `RecordResult` to the one `ResultHandler`, as a local
worker's does: group commit, patience while the store is unavailable, a refused
result ending as a failure. A retried submit records nothing twice; an expired
lease is refused (`LeaseLost`) and the job is back in the queue.

Everything here runs on its own database thread (`DbThread`) and its own locks:
nothing depends on a lock of the driver that calls it.

Leasing reads the read models as they are, like every read of the API: it never
projects (the projector beside the server keeps them current, `runtime.projector`)
and says how far behind they are (`Leases.lag`). Jobs this process leased that the
read models do not show yet are left out of the next leases (`Unprojected`); a job
a lagging read model still shows as due is refused by its aggregate, never leased
twice.
"""

from __future__ import annotations

import asyncio
import threading
import time
import zlib
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from datetime import datetime

import structlog

from domain.errors import Conflict, LeaseLost
from domain.recording import Recorded
from domain.values import CrawlOutcome, CrawlTask, Origin
from runtime import metrics
from runtime.clock import Clock
from runtime.db_thread import DbThread
from runtime.ledger import Ledger
from runtime.results import RecordResult, ResultHandler
from runtime.scheduler import Scheduler
from workers.crawl_pages import CrawlPages, PageReader, failed
from workers.extraction.adapters.base import Page, Request
from workers.fetching.fetch import decode_body
from workers.fetching.fetch_errors import FetchError, failure

__all__ = ["MAX_PAGE_BYTES", "Answer", "BotPages", "Lease", "Leases", "Request", "SubmitPage",
           "Submitted", "Unprojected", "lease_for", "ungzip"]

#: the largest page a bot may submit, decompressed (the local fetcher's limit)
MAX_PAGE_BYTES = 8 * 1024 * 1024
#: seconds a submit waits for an unavailable event store (within the reference bot's
#: 60 s request timeout: it is answered, with the error, before the bot gives up on it)
PATIENCE = 30.0


@dataclass(frozen=True)
class Submitted:
    """What a bot reports for one page of a leased job: the page, or its fetch's failure."""

    ok: bool
    http_status: int | None = None
    final_url: str | None = None
    content_type: str = ""
    body: bytes = b""
    error_kind: str | None = None
    message: str = ""
    retry_after: float | None = None
    duration: float = 0.0


@dataclass(frozen=True)
class SubmitPage:
    """Page `index` of a bot's crawl of a leased job (0 first, then each request the
    answers asked for), or the failure of its fetch."""

    job_id: str
    lease_id: str
    page: Submitted
    index: int
    origin: Origin


@dataclass(frozen=True)
class Answer:
    """What a submit did: recorded the crawl, or asks for its `next` page."""

    recorded: Recorded | None = None
    next: Request | None = None


@dataclass(frozen=True)
class Leases:
    """What a lease request got, and how many events the read models it was chosen
    from had still to apply."""

    leases: list[Lease]
    lag: int


class Unprojected:
    """Jobs leased here that the read models may not show yet (they would still look
    due): each is kept until the read models have applied the log position its lease
    was recorded at. Thread-safe."""

    def __init__(self) -> None:
        self._jobs: dict[str, int] = {}
        self._lock = threading.Lock()

    def add(self, job_ids: Iterable[str], position: int) -> None:
        with self._lock:
            self._jobs.update((job_id, position) for job_id in job_ids)

    def jobs(self, projected: int) -> frozenset[str]:
        """The jobs whose lease is past `projected` (the read models' position)."""
        with self._lock:
            self._jobs = {job: at for job, at in self._jobs.items() if at > projected}
            return frozenset(self._jobs)


@dataclass(frozen=True)
class Lease:
    """A job leased to a bot, and the request to fetch first (None: the job cannot be
    crawled as it stands; the bot submits a failure and the server records why)."""

    task: CrawlTask
    request: Request | None


def lease_for(ledger: Ledger, worker: str, ttl: float, limit: int, now: datetime,
              recent: Unprojected | None = None) -> tuple[list[CrawlTask], int]:
    """Dispatch and lease up to `limit` due jobs to `worker` (one scheduler tick over the
    read models as they are: they say which jobs are due; nothing is projected here),
    and how many events the read models had still to apply. Leases that ran out (a bot
    killed mid-crawl) are expired first; their jobs are due again once the read models
    show it. `recent`: jobs leased before that the read models may not show yet."""
    projected = ledger.projection_position()
    lag = max(0, ledger.source.head() - projected)
    scheduler = Scheduler(ledger)
    scheduler.reap(now)
    exclude = recent.jobs(projected) if recent is not None else frozenset()
    tasks = scheduler.tick_and_lease(now, worker, ttl, limit, exclude=exclude)
    if recent is not None and tasks:
        recent.add((str(task.job_id) for task in tasks), ledger.source.head())
    metrics.LEASES.inc(len(tasks))
    return tasks, lag


def ungzip(data: bytes, limit: int = MAX_PAGE_BYTES) -> bytes:
    """Decompress a submitted page, refusing more than `limit` bytes (no gzip bomb)."""
    inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
    try:
        body = inflater.decompress(data, limit + 1)
    except zlib.error as error:
        raise ValueError(f"the page is not gzip data: {error}") from None
    if len(body) > limit or inflater.unconsumed_tail:
        raise ValueError(f"the page is over the {limit}-byte limit")
    return body


@dataclass
class _Crawl:
    """A bot's crawl between its submits."""

    pages: CrawlPages
    seconds: float = 0.0
    touched: float = field(default_factory=time.monotonic)


class BotPages:
    """The bot path: leases with their first request, and the handler of `SubmitPage`.

    Crawls in progress live in memory: after a server restart a continued crawl is
    refused (409) and its lease runs out, so the job is tried again. A retried submit
    of a page already taken answers the same; a page out of order is refused.
    """

    def __init__(self, ledger: Ledger, reader: PageReader, clock: Clock,
                 forget_after: float = 3600.0, db: DbThread | None = None,
                 patience: float = PATIENCE) -> None:
        self.ledger = ledger
        self.reader = reader
        self.clock = clock
        self.forget_after = forget_after
        #: the thread every ledger call of the bot path runs on (its results group there)
        self.db = db or DbThread(1)
        self.results = ResultHandler(ledger.app, self.db, clock, patience)
        self.archive = ledger.archive()
        self._crawls: dict[str, _Crawl] = {}
        self._lock = threading.Lock()
        self._leased = Unprojected()

    def close(self) -> None:
        self.db.close()
        self.archive.close()

    async def lease(self, worker: str, ttl: float, limit: int) -> Leases:
        tasks, lag = await self.db.call(lease_for, self.ledger, worker, ttl, limit,
                                        self.clock.now(), self._leased)
        return Leases([Lease(task, self._first_request(task)) for task in tasks], lag)

    def _first_request(self, task: CrawlTask) -> Request | None:
        try:
            return self.reader.begin(task).first
        except Exception:  # noqa: BLE001 - the page submitted says why (`SubmitPage`)
            return None

    async def send(self, command: SubmitPage) -> Answer:
        """Take the page: the next request the crawl wants, or the crawl recorded."""
        task = await self.db.call(self._leased_task, command)
        if task is None:  # a retried submit: recorded once already
            return Answer(Recorded(command.job_id, duplicate=True))
        with structlog.contextvars.bound_contextvars(
                job_id=command.job_id, store_id=task.store_id, lease_id=command.lease_id,
                worker=command.origin.actor):
            # reading a page is CPU (and archiving it I/O): off the event loop
            step = await asyncio.to_thread(self._step, task, command)
            if isinstance(step, Request):
                return Answer(next=step)
            metrics.FETCH_SECONDS.labels(task.kind).observe(step.duration)
            recorded = await self.results.send(RecordResult(command.job_id, command.lease_id,
                                                            step, command.origin))
            metrics.observe_outcome(step, recorded=recorded is not None)
            if recorded is None:
                raise LeaseLost(f"lease {command.lease_id} of job {command.job_id} ended "
                                "before its result was recorded")
            return Answer(recorded)

    def _leased_task(self, command: SubmitPage) -> CrawlTask | None:
        """The task of the command's lease (None: its result is recorded already)."""
        app = self.ledger.app
        job = app.get_job(command.job_id)
        if job.already_recorded(command.lease_id):
            return None
        job.require_lease(command.lease_id, "record a result for")
        return app.task_for(job)

    def _step(self, task: CrawlTask, command: SubmitPage) -> CrawlOutcome | Request:
        lease_id, index, sent = command.lease_id, command.index, command.page
        with self._lock:
            self._forget_stale()
            crawl = self._crawls.pop(lease_id, None)
        taken = len(crawl.pages.pages) if crawl else 0
        if index > taken:
            raise Conflict(f"page {index} of lease {lease_id} is out of order (the server "
                           f"has {taken}): start the crawl again")
        if crawl is not None and index < taken:  # a retried submit of a page
            self._keep(lease_id, crawl)
            return crawl.pages.requests[index + 1]
        try:
            crawl = crawl or _Crawl(self.reader.begin(task))
            crawl.seconds += sent.duration
            following = self._take(crawl.pages, sent)
        except Exception as error:  # noqa: BLE001 - the world's failure, or an adapter's bug
            seconds = crawl.seconds if crawl else sent.duration
            return replace(self._failure(task, error), duration=seconds)
        if following is not None:
            self._keep(lease_id, crawl)
            return following
        raw_ref = self.archive.crawl_ref(crawl.pages.refs)
        return replace(crawl.pages.outcome(raw_ref), duration=crawl.seconds)

    def _take(self, pages: CrawlPages, sent: Submitted) -> Request | None:
        if not sent.ok:
            raise _fetch_error(sent)
        request = pages.expected
        page = Page(sent.final_url or request.url, None, sent.http_status or 200,
                    sent.content_type, sent.body, request, decode=decode_body)
        return pages.take(page, self.archive.put(sent.body))

    @staticmethod
    def _failure(task: CrawlTask, error: Exception) -> CrawlOutcome:
        if isinstance(error, _UnknownKind):
            return failure("worker_error", str(error))
        return failed(task, error)

    def _keep(self, lease_id: str, crawl: _Crawl) -> None:
        crawl.touched = time.monotonic()
        with self._lock:
            self._crawls[lease_id] = crawl

    def _forget_stale(self) -> None:
        cutoff = time.monotonic() - self.forget_after
        for lease_id in [k for k, c in self._crawls.items() if c.touched < cutoff]:
            del self._crawls[lease_id]


class _UnknownKind(Exception):
    """A bot reported an error kind the taxonomy does not know."""


def _fetch_error(sent: Submitted) -> Exception:
    try:
        return FetchError(sent.error_kind or "connect", sent.message or "the bot's fetch failed",
                          http_status=sent.http_status, retry_after=sent.retry_after)
    except ValueError:
        return _UnknownKind(f"bot reported {sent.error_kind!r}: {sent.message}")
