"""Remote workers (bots behind NAT): lease work for them, record what they fetched.

A bot only fetches. What it submits — each raw page, or the failure — is archived,
extracted and recorded here exactly as a local worker's crawl would be (the same
registry picks the adapter, the same pagination limits and outcome rules apply, the
same command records it), so a better extractor applies to bot results too. A crawl
of several pages is submitted a page at a time (`RemoteCrawls`). Recording is idempotent by
lease: a retried submit records nothing twice; an expired lease is refused
(`LeaseLost`) and the job is back in the queue.
"""

from __future__ import annotations

import time
import zlib
from dataclasses import dataclass, field
from datetime import datetime

import structlog

from domain.errors import Conflict
from domain.recording import Recorded
from domain.values import CrawlFailure, CrawlOutcome, CrawlTask
from runtime import metrics
from runtime.ledger import Ledger
from runtime.scheduler import Scheduler
from workers.adapters import REGISTRY
from workers.adapters.base import Adapter, Extraction, ExtractionError, Page, Request
from workers.archive import RawArchive
from workers.crawl_pages import build_outcome, gone, request_key
from workers.errors import FetchError, failure
from workers.fetch import decode_body

__all__ = ["MAX_PAGE_BYTES", "Answer", "RemoteCrawls", "Submitted", "lease_for", "remote_crawls",
           "ungzip"]

#: the largest page a bot may submit, decompressed (the local fetcher's limit)
MAX_PAGE_BYTES = 8 * 1024 * 1024


@dataclass(frozen=True)
class Submitted:
    """What a bot reports for one leased job."""

    ok: bool
    http_status: int | None = None
    final_url: str | None = None
    content_type: str = ""
    body: bytes = b""
    error_kind: str | None = None
    message: str = ""
    retry_after: float | None = None
    duration: float = 0.0


def lease_for(ledger: Ledger, worker: str, ttl: float, limit: int, now: datetime
              ) -> list[CrawlTask]:
    """Dispatch and lease up to `limit` due jobs to `worker` (one scheduler tick, on read
    models caught up first: they say which jobs are due). Leases that ran out (a bot
    killed mid-crawl) are expired first, so their jobs are in the queue again."""
    ledger.catch_up()
    scheduler = Scheduler(ledger)
    if scheduler.reap(now):
        ledger.catch_up()
    tasks = scheduler.tick_and_lease(now, worker, ttl, limit)
    metrics.LEASES.inc(len(tasks))
    return tasks


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
    """A bot's crawl of several pages, between its submits."""

    task: CrawlTask
    adapter: Adapter
    requests: list[Request]
    pages: list[Page] = field(default_factory=list)
    refs: list[str] = field(default_factory=list)
    extractions: list[Extraction] = field(default_factory=list)
    touched: float = field(default_factory=time.monotonic)


@dataclass(frozen=True)
class Answer:
    """What a submit did: recorded the crawl, or asks for its `next` page."""

    recorded: Recorded | None = None
    next: Request | None = None


class RemoteCrawls:
    """Bot crawls in progress, submitted a page at a time.

    A catalog that paginates is crawled by the bot page by page: each submit is
    archived and extracted here, and the answer names the next request the adapter
    wants (`Answer.next`), until it wants none; then the whole crawl is recorded, as
    the local crawler records it (same adapter, same pagination limits, same outcome).
    A retried submit of a page already taken answers the same; a page out of order is
    refused. Crawls in progress live in memory: after a server restart a continued
    crawl is refused (409) and its lease runs out, so the job is tried again.
    """

    def __init__(self, archive: RawArchive, max_pages: int = 200,
                 forget_after: float = 3600.0) -> None:
        self.archive = archive
        self.max_pages = max_pages
        self.forget_after = forget_after
        self._crawls: dict[str, _Crawl] = {}

    def submit(self, ledger: Ledger, job_id: str, lease_id: str, sent: Submitted, index: int,
               now: datetime) -> Answer:
        app = ledger.app
        job = app.get_job(job_id)
        if job.already_recorded(lease_id):  # a retried submit: recorded once already
            return Answer(Recorded(str(job.id), duplicate=True))
        job.require_lease(lease_id, "record a result for")
        task = app.task_for(job)
        with structlog.contextvars.bound_contextvars(job_id=job_id, store_id=task.store_id,
                                                     lease_id=lease_id, worker=job.worker):
            step = self._step(task, lease_id, sent, index)
            if isinstance(step, Request):
                return Answer(next=step)
            metrics.FETCH_SECONDS.labels(task.kind).observe(sent.duration)
            if isinstance(step, CrawlFailure):
                recorded = app.record_failure(job_id, lease_id, step, now)
            else:
                recorded = app.record_success(job_id, lease_id, step, now)
            metrics.observe_outcome(step, recorded=True)
            return Answer(recorded)

    def _step(self, task: CrawlTask, lease_id: str, sent: Submitted, index: int
              ) -> CrawlOutcome | Request:
        self._forget_stale()
        crawl = self._crawls.get(lease_id)
        if index > 0 and (crawl is None or index > len(crawl.pages)):
            raise Conflict(f"page {index} of lease {lease_id} is out of order (the server "
                           f"has {len(crawl.pages) if crawl else 0}): start the crawl again")
        if crawl is not None and index < len(crawl.pages):  # a retried submit of a page
            return crawl.requests[index + 1]
        if not sent.ok:
            self._crawls.pop(lease_id, None)
            return _failure(task, sent)
        first = REGISTRY.for_task(task)
        request = crawl.requests[index] if crawl else (
            first.start(task) if first else Request(task.url))
        page = Page(url=sent.final_url or request.url,
                    text=decode_body(sent.body, sent.content_type),
                    status=sent.http_status or 200, content_type=sent.content_type,
                    body=sent.body, request=request if index else None)
        ref = self.archive.put(sent.body)
        if crawl is None:
            adapter = first or REGISTRY.detect(page)
            if adapter is None:
                return failure("parse_error", f"no adapter recognises the content at {page.url}")
            crawl = _Crawl(task, adapter, [request])
        try:
            extraction = crawl.adapter.extract(page, task)
        except ExtractionError as error:
            self._crawls.pop(lease_id, None)
            return failure("parse_error", f"{page.url}: {error}")
        except Exception as error:  # noqa: BLE001 - an adapter bug fails this page only
            self._crawls.pop(lease_id, None)
            return failure("parse_error", f"{crawl.adapter.name} could not read {page.url}: "
                                          f"{type(error).__name__}: {error}")
        crawl.pages.append(page.without_text())  # the text was only for extraction
        crawl.refs.append(ref)
        crawl.extractions.append(extraction)
        crawl.touched = time.monotonic()
        following = extraction.next_request
        if following is not None:
            refused = self._refuse_page(crawl, following)
            if refused is not None:
                self._crawls.pop(lease_id, None)
                return refused
            crawl.requests.append(following)
            self._crawls[lease_id] = crawl
            return following
        self._crawls.pop(lease_id, None)
        raw_ref = self.archive.crawl_ref(crawl.refs)
        return build_outcome(task, crawl.adapter, crawl.pages, crawl.refs, crawl.extractions,
                             raw_ref)

    def _refuse_page(self, crawl: _Crawl, following: Request) -> CrawlFailure | None:
        """The local crawler's pagination limits: at most `max_pages`, no loop."""
        if len(crawl.pages) >= self.max_pages:
            # a truncated catalog would wrongly report products as gone (as locally)
            return FetchError("too_large", f"{following.url}: pagination exceeds "
                                           f"max_pages={self.max_pages}",
                              retryable=False).to_failure()
        if request_key(following) in {request_key(r) for r in crawl.requests}:
            return failure("parse_error", f"pagination loop: {following.method} "
                                          f"{following.url} again")
        return None

    def _forget_stale(self) -> None:
        cutoff = time.monotonic() - self.forget_after
        for lease_id in [k for k, c in self._crawls.items() if c.touched < cutoff]:
            del self._crawls[lease_id]


def _failure(task: CrawlTask, sent: Submitted) -> CrawlOutcome:
    try:
        error = FetchError(sent.error_kind or "connect", sent.message or "the bot's fetch failed",
                           http_status=sent.http_status, retry_after=sent.retry_after)
    except ValueError:  # an error kind the taxonomy does not know
        return failure("worker_error", f"bot reported {sent.error_kind!r}: {sent.message}")
    # a product page answering 404/410 is an answer: the product is gone (as locally)
    return gone(task, error) or error.to_failure(sent.duration)


def remote_crawls(ledger: Ledger, forget_after: float) -> RemoteCrawls:
    """Bot crawls of this ledger: their pages are archived as the local crawler's are, in
    the raw archive under the ledger's data directory."""
    return RemoteCrawls(RawArchive(ledger.data_dir), forget_after=forget_after)
