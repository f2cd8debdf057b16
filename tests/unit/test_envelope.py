"""The public envelope built from stored events: fields, primitive payloads, JSON round trip."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

import pytest

from domain.application import CrawlLedger
from domain.envelope import Envelope, _iso_z, from_stored
from domain.values import CrawlSuccess, Observation, Offer
from eventstore import SQLiteBackend

T0 = datetime(2026, 11, 22, 8, 0, 3, tzinfo=UTC)
FIELDS = ["event_id", "position", "stream_id", "stream_type", "version", "event_type",
          "schema_version", "occurred_at", "recorded_at", "payload"]


@pytest.fixture
def app() -> Iterator[CrawlLedger]:
    ledger = CrawlLedger(SQLiteBackend(Path(":memory:")))
    yield ledger
    ledger.close()


def envelopes(app: CrawlLedger) -> list[Envelope]:
    return [from_stored(n.id, n.originator_id, n.originator_version, n.topic, n.state)
            for n in app.recorder.select_notifications(start=1, limit=1000)]


def crawl_twice(app: CrawlLedger, first: str, second: str) -> None:
    store = app.register_store(name="S", base_url="https://s.example", platform="shopify", now=T0)
    job_id = app.schedule_job(kind="catalog", url="https://s.example/p", now=T0, store_id=store,
                              every=3600)
    for price in (first, second):
        now = app.get_job(job_id).next_run_at
        task = app.lease(job_id, "w", 60, now)
        obs = Observation("p1", "P", (Offer("1/8oz", Decimal(price), "USD"),))
        app.record_success(job_id, task.lease_id, CrawlSuccess(
            200, "https://s.example/p", "t", "1", f"h{price}", observations=(obs,)), now)


def test_envelope_fields_and_primitive_payload(app: CrawlLedger) -> None:
    crawl_twice(app, "45.00", "39.00")
    all_envs = envelopes(app)
    assert [e.position for e in all_envs] == list(range(1, len(all_envs) + 1))
    change = next(e for e in all_envs if e.event_type == "Product.PriceChanged")
    assert list(change.to_dict()) == FIELDS
    assert change.stream_type == "Product" and change.schema_version == 1
    assert change.event_id == f"{change.stream_id}:{change.version}"
    assert change.payload["old"] == "45.00" and change.payload["new"] == "39.00"
    assert change.payload["currency"] == "USD" and change.payload["option"] == "1/8oz"
    assert change.occurred_at.endswith("Z") and change.occurred_at.startswith("2026-")
    assert change.recorded_at.endswith("Z")
    assert "timestamp" not in change.payload and "originator_topic" not in change.payload
    scheduled = next(e for e in all_envs if e.event_type == "CrawlJob.Scheduled")
    assert scheduled.occurred_at == "2026-11-22T08:00:03.000000Z"
    assert scheduled.payload["store_id"] == all_envs[0].stream_id


def test_envelope_json_round_trip(app: CrawlLedger) -> None:
    crawl_twice(app, "45.00", "45.10")
    for env in envelopes(app):
        text = env.to_json()
        assert list(json.loads(text)) == FIELDS
        assert Envelope.from_json(text) == env


@pytest.mark.parametrize(("text", "expected"), [
    ("2026-11-22T08:00:03+00:00", "2026-11-22T08:00:03.000000Z"),
    ("2026-11-22T08:00:03.412000+00:00", "2026-11-22T08:00:03.412000Z"),
    ("2026-11-22T10:00:03.5+02:00", "2026-11-22T08:00:03.500000Z"),
    ("2026-11-22T08:00:03", "2026-11-22T08:00:03.000000Z"),
])
def test_times_are_utc_with_z(text: str, expected: str) -> None:
    assert _iso_z(text) == expected
