"""Wire schemas of the internal topics (Faust records), separate from domain events."""

from __future__ import annotations

import faust


class WorkItem(faust.Record, serializer="json"):
    """One dispatched job to crawl, on `ledger.work.v1`, keyed by the target host."""

    job_id: str
    url: str
    host: str
