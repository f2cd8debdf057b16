"""Event schema evolution: `CrawlJob.Dispatched` and `CrawlJob.Leased` v1 rows, as the
code before their class version 2 recorded them (tests/fixtures/crawl_job_v1_events.json),
load on both backends: the aggregate gets them upcast (their reason "not recorded"),
envelopes keep them as recorded (schema_version 1, so the audit chain is unchanged) and
`domain.upcasting.current` gives their payload at the current version; the job then
runs on, recording version 2 events that say why."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from uuid import UUID

from eventsourcing.persistence import StoredEvent

from domain.upcasting import CURRENT, NOT_RECORDED, current
from domain.values import CrawlSuccess
from ledger.bootstrap import Ledger

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "crawl_job_v1_events.json"
T1 = datetime(2026, 3, 1, 8, 1, tzinfo=UTC)


def test_v1_rows_load_upcast_and_run_on(ledger: Ledger) -> None:
    fixture = json.loads(FIXTURE.read_text())
    job_id = UUID(fixture["originator_id"])
    ledger.app.recorder.insert_events([
        StoredEvent(originator_id=job_id, originator_version=row["originator_version"],
                    topic=row["topic"], state=row["state"].encode())
        for row in fixture["rows"]])

    job = ledger.app.get_job(job_id)  # the library upcasts v1 -> v2 on load
    assert (job.state, job.worker, job.attempt) == ("leased", "old-worker", 1)

    recorded = ledger.source.read(0, 10)
    dispatched, leased = recorded[1], recorded[2]
    assert (dispatched.event_type, dispatched.schema_version) == ("CrawlJob.Dispatched", 1)
    assert "reason" not in dispatched.payload  # the log keeps what was recorded
    assert current(dispatched)["reason"] == NOT_RECORDED
    assert current(dispatched)["due_at"] is None and "reason" not in dispatched.payload
    assert current(leased)["reason"] == NOT_RECORDED and leased.schema_version == 1
    assert CURRENT == {"CrawlJob.Dispatched": 2, "CrawlJob.Leased": 2}

    assert job.lease_id is not None
    ledger.app.record_success(job_id, job.lease_id, CrawlSuccess(
        200, job.url, "shopify", "shopify/1", "h1"), T1)
    ledger.app.dispatch_due([job_id], T1.replace(hour=9, minute=5))
    after = ledger.source.read(3, 10)
    newest = [e for e in after if e.event_type == "CrawlJob.Dispatched"][-1]
    assert newest.schema_version == 2 and newest.payload["reason"] == "due"
    assert current(newest) is newest.payload  # already current: no copy
    ledger.catch_up()
    assert ledger.read.job(str(job_id))["state"] == "dispatched"
