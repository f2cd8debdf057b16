"""The ledger's contract, run on both backends (SQLite file and PostgreSQL schema):
commands record exactly what they should, refused ones nothing, and the read
models reflect the events idempotently."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any
from uuid import UUID, uuid4

import pytest

from domain import ids
from domain.errors import InvalidInput, InvalidTransition, LeaseLost, NotFound
from domain.timeutil import iso
from domain.values import CrawlFailure, CrawlSuccess, Observation, Offer
from ledger.bootstrap import Ledger
from projections import read_models
from projections.framework import POSITIONS, table_rows
from projections.runner import apply_envelopes

T0 = datetime(2026, 3, 1, 8, 0, tzinfo=UTC)


def head(ledger: Ledger) -> int:
    return ledger.app.recorder.max_notification_id() or 0


def snapshot(ledger: Ledger) -> dict[str, Any]:
    """Every read-model row and every projection position."""
    tables = {t.name: table_rows(ledger.db, t, "") for p in read_models() for t in p.tables}
    positions = ledger.db.query(f"SELECT * FROM {POSITIONS} ORDER BY name")
    return tables | {POSITIONS: positions}


def obs(pid: str, price: str, availability: str = "in_stock") -> Observation:
    return Observation(pid, f"Product {pid}", (Offer("1g", Decimal(price), "USD"),),
                       availability=availability, brand="Brand")


def success(*observations: Observation, content: str = "c") -> CrawlSuccess:
    return CrawlSuccess(200, "https://shop.example/products.json", "test", "1", content,
                        observations=observations)


def setup_job(ledger: Ledger) -> tuple[UUID, UUID]:
    store_id = ledger.app.register_store(name="Shop", base_url="https://shop.example",
                                         platform="shopify", now=T0)
    job_id = ledger.app.schedule_job(kind="catalog", url="https://shop.example/products.json",
                                     now=T0, store_id=store_id, every=3600, adaptive=False)
    return store_id, job_id


def run(ledger: Ledger, job_id: UUID, outcome: CrawlSuccess, now: datetime) -> str:
    lease_id = ledger.app.lease(job_id, "w1", 300, now).lease_id
    ledger.app.record_success(job_id, lease_id, outcome, now)
    return lease_id


def test_schedule_lease_record_and_read_models(ledger: Ledger) -> None:
    store_id, job_id = setup_job(ledger)
    ledger.catch_up()
    assert [r["store_id"] for r in ledger.read.stores()] == [str(store_id)]
    assert [r["job_id"] for r in ledger.read.due_jobs(T0)] == [str(job_id)]
    assert ledger.read.due_jobs(T0 - timedelta(seconds=1)) == []

    task = ledger.app.lease(job_id, "w1", 300, T0)
    assert (task.job_id, task.attempt, task.platform) == (str(job_id), 1, "shopify")
    ledger.catch_up()
    row = ledger.read.job(str(job_id))
    assert row is not None
    assert (row["state"], row["lease_id"], row["worker"], row["attempt"]) == (
        "leased", task.lease_id, "w1", 1)
    assert ledger.read.due_jobs(T0) == []

    result = ledger.app.record_success(job_id, task.lease_id,
                                       success(obs("a", "10.00"), obs("b", "20.50")), T0)
    assert (result.duplicate, result.products, result.new_products) == (False, 2, 2)
    assert result.events == 1 + 1 + 2 * 2  # Succeeded, Rescheduled, 2 x (Discovered, Observed)
    ledger.catch_up()
    row = ledger.read.job(str(job_id))
    assert row is not None
    assert (row["state"], row["attempt"], row["lease_id"], row["runs"], row["last_status"]) == (
        "scheduled", 0, None, 1, "succeeded")
    assert row["next_run_at"] == iso(T0 + timedelta(hours=1))
    assert row["last_outcome"]["http_status"] == 200
    assert ledger.read.due_jobs(T0 + timedelta(minutes=59)) == []
    assert len(ledger.read.due_jobs(T0 + timedelta(hours=1))) == 1

    products = {p["provider_product_id"]: p for p in ledger.read.products(store_id=str(store_id))}
    assert sorted(products) == ["a", "b"]
    assert (products["b"]["min_price"], products["b"]["currency"], products["b"]["in_stock"]) == (
        "20.50", "USD", True)
    assert products["a"]["offers"][0]["price"] == "10.00"
    assert products["a"]["product_id"] == str(ids.product_id(str(store_id), "a"))
    assert {r["status"] for r in ledger.read.stock_status(str(store_id))} == {"in_stock"}


def test_out_of_stock_and_price_change_reach_the_read_models(ledger: Ledger) -> None:
    store_id, job_id = setup_job(ledger)
    now = T0
    run(ledger, job_id, success(obs("a", "10.00"), obs("b", "5.00")), now)
    for _ in range(3):
        now += timedelta(hours=1)
        run(ledger, job_id, success(obs("a", "12.00")), now)
    ledger.catch_up()
    a, b = (ledger.read.product(str(ids.product_id(str(store_id), p))) for p in "ab")
    assert a is not None and b is not None
    assert (a["min_price"], a["price_changes"], a["observations"]) == ("12.00", 1, 4)
    assert (b["in_stock"], b["consecutive_misses"], b["out_of_stock_since"]) == (
        False, 3, iso(now))
    assert [p["product_id"] for p in ledger.read.products(out_of_stock=True)] == [b["product_id"]]
    stock = {r["product_id"]: r for r in ledger.read.stock_status()}
    assert (stock[b["product_id"]]["status"], stock[b["product_id"]]["reason"]) == (
        "out_of_stock", "misses")
    now += timedelta(hours=1)
    run(ledger, job_id, success(obs("a", "12.00"), obs("b", "5.00")), now)
    ledger.catch_up()
    stock = {r["product_id"]: r for r in ledger.read.stock_status()}
    assert (stock[b["product_id"]]["status"], stock[b["product_id"]]["times_out"]) == (
        "in_stock", 1)


def test_the_same_lease_recorded_twice_is_a_no_op(ledger: Ledger) -> None:
    _, job_id = setup_job(ledger)
    outcome = success(obs("a", "10.00"))
    lease_id = run(ledger, job_id, outcome, T0)
    before = head(ledger)
    again = ledger.app.record_success(job_id, lease_id, outcome, T0 + timedelta(seconds=5))
    assert again.duplicate and again.events == 0
    late_failure = ledger.app.record_failure(job_id, lease_id,
                                             CrawlFailure("timeout", "t", True), T0)
    assert late_failure.duplicate
    assert head(ledger) == before


def test_unknown_ids_are_not_found_and_record_nothing(ledger: Ledger) -> None:
    store_id, job_id = setup_job(ledger)
    before = head(ledger)
    unknown = uuid4()
    refused = [
        lambda: ledger.app.lease(unknown, "w", 60, T0),
        lambda: ledger.app.record_success(unknown, "L", success(), T0),
        lambda: ledger.app.record_failure("nope", "L", CrawlFailure("dns", "x", True), T0),
        lambda: ledger.app.pause(unknown, T0),
        lambda: ledger.app.cancel("not-a-uuid", T0),
        lambda: ledger.app.schedule_job(kind="catalog", url="https://x.example/", now=T0,
                                        store_id=unknown, every=3600),
        lambda: ledger.app.get_product(unknown),
        lambda: ledger.app.lease(store_id, "w", 60, T0),  # a store is not a job
    ]
    for command in refused:
        with pytest.raises(NotFound, match="unknown"):
            command()
    assert head(ledger) == before
    assert ledger.app.get_job(job_id).version == 1


def test_refused_commands_record_nothing(ledger: Ledger) -> None:
    _, job_id = setup_job(ledger)
    late = ledger.app.schedule_job(kind="feed", url="https://f.example/rss", now=T0, every=3600,
                                   start_at=T0 + timedelta(hours=2))
    before = head(ledger)
    with pytest.raises(InvalidTransition):
        ledger.app.resume(job_id, T0)
    with pytest.raises(InvalidTransition, match="not due"):
        ledger.app.lease(late, "w", 60, T0)
    with pytest.raises(InvalidInput, match="already exists"):
        ledger.app.schedule_job(kind="catalog", url="https://shop.example/products.json",
                                now=T0, every=3600)
    with pytest.raises(InvalidInput, match="no timezone"):
        ledger.app.pause(job_id, datetime(2026, 3, 1))
    assert head(ledger) == before
    ledger.app.lease(job_id, "w", 60, T0)
    before = head(ledger)
    with pytest.raises(LeaseLost):
        ledger.app.record_success(job_id, "someone-elses-lease", success(), T0)
    with pytest.raises(InvalidTransition):
        ledger.app.force_run(job_id, T0)
    with pytest.raises(InvalidTransition):
        ledger.app.retry(job_id, T0)
    assert head(ledger) == before


def test_catching_up_twice_changes_nothing(ledger: Ledger) -> None:
    _, job_id = setup_job(ledger)
    run(ledger, job_id, success(obs("a", "1.00"), obs("b", "2.00")), T0)
    assert ledger.catch_up() == head(ledger)
    first = snapshot(ledger)
    assert ledger.catch_up() == 0
    assert snapshot(ledger) == first


def test_a_redelivered_batch_is_not_applied_twice(ledger: Ledger) -> None:
    _, job_id = setup_job(ledger)
    now = T0
    for price in ("1.00", "2.00", "3.00"):
        run(ledger, job_id, success(obs("a", price), obs("b", price), content=price), now)
        now += timedelta(hours=1)
    ledger.catch_up()
    expected = snapshot(ledger)
    envelopes = ledger.source.read(0, 10_000)
    assert len(envelopes) == head(ledger)
    projections = ledger.projections()

    apply_envelopes(ledger.db, projections, envelopes)  # redelivered: behind the positions
    assert snapshot(ledger) == expected

    with ledger.db.transaction() as tx:  # positions lost, rows (with versions) kept
        tx.execute(f"UPDATE {POSITIONS} SET position = 0")
    apply_envelopes(ledger.db, projections, envelopes)
    assert snapshot(ledger) == expected

    with ledger.db.transaction() as tx:
        tx.execute(f"UPDATE {POSITIONS} SET position = 0")
    for envelope in envelopes[::-1][:5] + envelopes:  # a few out of order, then everything
        apply_envelopes(ledger.db, projections, [envelope])
    assert snapshot(ledger) == expected
