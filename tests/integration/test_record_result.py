"""`RecordResult` and its one handler (`runtime.results.ResultHandler`) on both backends:
the result's event names who recorded it; a store that is unavailable for a moment is
waited for; a lost lease records nothing; a success the domain refuses ends the
attempt as a failure."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

from eventsourcing.persistence import OperationalError

from domain.values import CrawlSuccess, Observation, Offer, Origin
from ledger.bootstrap import Ledger
from runtime.clock import SimulatedClock
from runtime.db_thread import DbThread
from runtime.results import RecordResult, ResultHandler

T0 = datetime(2026, 3, 1, tzinfo=UTC)
BASE = "https://shop.example"
BY = Origin("worker:host:1:0", "runner")


def leased(ledger: Ledger, kind: str = "product_page") -> tuple[str, str]:
    app = ledger.app
    store = app.register_store(name="Shop", base_url=BASE, platform="generic", now=T0)
    job = app.schedule_job(kind=kind, url=f"{BASE}/p/1", now=T0, store_id=store, every=3600)
    return str(job), app.lease(job, "host:1:0", 600, T0).lease_id


def lamp() -> CrawlSuccess:
    return CrawlSuccess(200, BASE, "test", "1", "hash", observations=(
        Observation("p1", "Lamp", (Offer("one", Decimal("10.00"), "USD"),), "in_stock"),))


def send(ledger: Ledger, command: RecordResult) -> Any:
    async def go() -> Any:
        db = DbThread(1)
        try:
            return await ResultHandler(ledger.app, db, SimulatedClock(T0 + timedelta(seconds=5)),
                                       patience=30).send(command)
        finally:
            db.close()
    return asyncio.run(go())


def results(ledger: Ledger) -> list[dict[str, Any]]:
    return [{"type": e.event_type, **e.payload} for e in ledger.source.read(0, 1000)
            if e.event_type in ("CrawlJob.Succeeded", "CrawlJob.Failed")]


def test_the_result_names_who_recorded_it(ledger: Ledger) -> None:
    job, lease = leased(ledger)
    recorded = send(ledger, RecordResult(job, lease, lamp(), BY))
    assert recorded.products == 1 and not recorded.duplicate
    (event,) = results(ledger)
    assert (event["type"], event["actor"], event["surface"]) == (
        "CrawlJob.Succeeded", "worker:host:1:0", "runner")


def test_an_unavailable_store_is_waited_for(ledger: Ledger) -> None:
    job, lease = leased(ledger)
    record_many = ledger.app.record_many
    calls: list[int] = []

    def flaky(items: Any) -> Any:
        calls.append(len(items))
        if len(calls) == 1:
            raise OperationalError("database is locked")
        return record_many(items)

    ledger.app.record_many = flaky  # type: ignore[method-assign]
    recorded = send(ledger, RecordResult(job, lease, lamp(), BY))
    assert len(calls) == 2 and recorded.products == 1
    assert [e["type"] for e in results(ledger)] == ["CrawlJob.Succeeded"]


def test_a_lost_lease_records_nothing(ledger: Ledger) -> None:
    job, _ = leased(ledger)
    assert send(ledger, RecordResult(job, "not-the-lease", lamp(), BY)) is None
    assert results(ledger) == []
    assert ledger.app.get_job(job).state == "leased"


def test_a_refused_success_ends_the_attempt_as_a_failure(ledger: Ledger) -> None:
    job, lease = leased(ledger, kind="entry_point")
    # the resolved catalog is no URL a job may have: the domain refuses the result
    refused = CrawlSuccess(200, BASE, "test", "1", "hash", platform_store_id="shop-1",
                           catalog_url="ftp://catalog.invalid/")
    recorded = send(ledger, RecordResult(job, lease, refused, BY))
    assert recorded is not None and not recorded.duplicate
    (event,) = results(ledger)
    assert event["type"] == "CrawlJob.Failed" and event["error_kind"] == "worker_error"
    assert event["message"].startswith("result refused: bad URL 'ftp://catalog.invalid/'")
    assert (event["actor"], event["surface"]) == ("worker:host:1:0", "runner")
    assert ledger.app.get_job(job).state != "leased"
