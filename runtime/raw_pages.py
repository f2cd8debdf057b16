"""The page behind an observation: a product's `Observed` names the job that saw it,
and that job's `Succeeded`, recorded in the same command (so at the same time), names
the raw page it stored (`raw_ref`, content-addressed in `<data dir>/raw`).

The dashboard's chart links each point here; the CLI's `raw get REF` reads the same
archive.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from uuid import UUID

from domain.errors import NotFound
from runtime.history import stream_history
from runtime.ledger import Ledger
from workers.archive.raw_archive import ArchiveError

__all__ = ["RawPage", "page_behind"]


@dataclass(frozen=True)
class RawPage:
    job_id: str
    raw_ref: str
    #: the crawl's pages (a crawl of several pages stored a manifest of them)
    pages: list[str]
    #: the first page's bytes
    body: bytes


def page_behind(ledger: Ledger, job_id: str, at: datetime) -> RawPage:
    """The raw page of `job_id`'s successful run at `at` (the latest one at or before it);
    `NotFound` when there is none or the archive does not hold it."""
    job = ledger.app.get_job(job_id)
    runs = [e for e in stream_history(ledger, UUID(str(job.id)))
            if e.event_type == "CrawlJob.Succeeded"
            and datetime.fromisoformat(e.occurred_at) <= at]
    ref = str((runs[-1].payload.get("outcome") or {}).get("raw_ref") or "") if runs else ""
    if not ref:
        raise NotFound(f"job {job.id} stored no page for a run at {at.isoformat()}")
    archive = ledger.archive()
    try:
        pages = archive.page_refs(ref)
        return RawPage(str(job.id), ref, pages, archive.get(pages[0]))
    except ArchiveError as error:
        raise NotFound(str(error)) from None
