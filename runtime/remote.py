"""Remote workers (bots behind NAT): lease work for them, record what they fetched.

A bot only fetches. What it submits — the raw page, or the failure — is archived,
extracted and recorded here exactly as a local worker's crawl would be (the same
registry picks the adapter, the same outcome rules apply, the same command records
it), so a better extractor applies to bot results too. Recording is idempotent by
lease: a retried submit records nothing twice; an expired lease is refused
(`LeaseLost`) and the job is back in the queue.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from datetime import datetime

from domain.application import RecordResult
from domain.values import CrawlFailure, CrawlOutcome, CrawlTask
from runtime.ledger import Ledger
from runtime.scheduler import Scheduler
from workers.adapters import REGISTRY
from workers.adapters.base import ExtractionError, Page
from workers.archive import RawArchive
from workers.crawler import build_outcome
from workers.errors import FetchError, failure
from workers.fetch import decode_body

__all__ = ["MAX_PAGE_BYTES", "Submitted", "lease_for", "record_submitted", "ungzip"]

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
    models caught up first: they say which jobs are due)."""
    ledger.catch_up()
    return Scheduler(ledger).tick_and_lease(now, worker, ttl, limit)


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


def record_submitted(ledger: Ledger, job_id: str, lease_id: str, sent: Submitted,
                     now: datetime) -> RecordResult:
    """Archive, extract and record a bot's result as a local crawl would be recorded."""
    app = ledger.app
    job = app.get_job(job_id)
    if job.already_recorded(lease_id):  # a retried submit: recorded once already
        return RecordResult(str(job.id), duplicate=True)
    job.require_lease(lease_id, "record a result for")
    task = app.task_for(job)
    outcome = _outcome(task, sent, RawArchive(ledger.data_dir)) if sent.ok else _failure(sent)
    if isinstance(outcome, CrawlFailure):
        return app.record_failure(job_id, lease_id, outcome, now)
    return app.record_success(job_id, lease_id, outcome, now)


def _failure(sent: Submitted) -> CrawlFailure:
    try:
        error = FetchError(sent.error_kind or "connect", sent.message or "the bot's fetch failed",
                           http_status=sent.http_status, retry_after=sent.retry_after)
    except ValueError:  # an error kind the taxonomy does not know
        return failure("worker_error", f"bot reported {sent.error_kind!r}: {sent.message}")
    return error.to_failure(sent.duration)


def _outcome(task: CrawlTask, sent: Submitted, archive: RawArchive) -> CrawlOutcome:
    url = sent.final_url or task.url
    page = Page(url=url, text=decode_body(sent.body, sent.content_type), status=sent.http_status
                or 200, content_type=sent.content_type, body=sent.body)
    ref = archive.put(sent.body)
    adapter = REGISTRY.for_task(task) or REGISTRY.detect(page)
    if adapter is None:
        return failure("parse_error", f"no adapter recognises the content at {url}")
    try:
        extraction = adapter.extract(page, task)
    except ExtractionError as error:
        return failure("parse_error", f"{url}: {error}")
    except Exception as error:  # noqa: BLE001 - an adapter bug fails this page only
        return failure("parse_error", f"{adapter.name} could not read {url}: {error}")
    return build_outcome(task, adapter, [page], [ref], [extraction], ref)

