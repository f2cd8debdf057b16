"""Wire schemas of the internal topics (Faust records), separate from domain events."""

from __future__ import annotations

import faust


class WorkItem(faust.Record, serializer="json"):
    """One dispatched job to crawl, on `ledger.work.v1`, keyed by the target host."""

    job_id: str
    url: str
    host: str
    #: the event store the job lives in (a worker of another deployment drops it)
    ledger_id: str | None = None
