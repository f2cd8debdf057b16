"""Snapshots keep loading cheap and change nothing: an aggregate loaded from its latest
snapshot plus the events after it equals the one replayed from all its events (both backends)."""

from __future__ import annotations

import copy
import logging
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any
from uuid import UUID

import backends
import pytest

from domain.application import CrawlLedger
from domain.crawl_job import CrawlJob
from domain.product import Product
from domain.store import Store
from domain.values import CrawlFailure, CrawlSuccess, Observation, Offer
from ledger.bootstrap import Ledger, bootstrap

T0 = datetime(2026, 3, 1, 8, 0, tzinfo=UTC)
SMALL = {Store: 2, CrawlJob: 5, Product: 3}  # small intervals: many snapshots in a short test


@pytest.fixture
def ledger(store_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Ledger]:
    monkeypatch.setattr(CrawlLedger, "snapshotting_intervals", SMALL)
    with backends.open_ledger(store_url, tmp_path) as opened:
        yield opened


def observations(cycle: int) -> tuple[Observation, ...]:
    return tuple(
        Observation(provider_product_id=f"p{i}", name=f"Product {i}", brand="Brand",
                    offers=(Offer("1g", Decimal(10 + (i + cycle) % 4), "USD"),),
                    availability="in_stock" if (i + cycle) % 7 else "out_of_stock")
        for i in range(12) if (i * cycle) % 5 != 1)  # products vanish and come back


def crawl(app: CrawlLedger, job: UUID, cycles: range) -> None:
    for cycle in cycles:
        now = T0 + timedelta(hours=cycle)
        task = app.lease(job, "w", 300, now)
        if cycle % 6 == 5:
            app.record_failure(job, task.lease_id, CrawlFailure("http_5xx", "boom", True), now)
            continue
        app.record_success(job, task.lease_id, CrawlSuccess(
            200, task.url, "shopify", "shopify/1", f"h{cycle}", observations=observations(cycle)), now)
        if cycle % 4 == 0:
            app.change_store_policy(app.get_job(job).store_id, now=T0, crawl_delay=float(cycle % 3 + 1))


def state(aggregate: Any) -> dict[str, Any]:
    public = {k: v for k, v in vars(aggregate).items() if not k.startswith("_")}
    return copy.deepcopy(public) | {"id": aggregate.id, "version": aggregate.version,
                                    "created_on": aggregate.created_on,
                                    "modified_on": aggregate.modified_on}


def replayed(app: CrawlLedger, aggregate_id: UUID) -> dict[str, Any]:
    aggregate: Any = None
    for event in app.events.get(aggregate_id):
        aggregate = event.mutate(aggregate)
    return state(aggregate)


def setup_catalog(app: CrawlLedger) -> tuple[UUID, UUID]:
    store = app.register_store(name="S", base_url="https://s.example", platform="shopify", now=T0)
    job = app.schedule_job(kind="catalog", url="https://s.example/products.json", now=T0,
                           store_id=store, every=3600)
    return UUID(str(store)), UUID(str(job))


def test_loading_from_snapshots_equals_replaying_every_event(ledger: Ledger, store_url: str,
                                                             tmp_path: Path) -> None:
    store, job = setup_catalog(ledger.app)
    crawl(ledger.app, job, range(1, 24))
    products = sorted(UUID(p) for p in ledger.app.get_job(job).products)
    ids = [store, job, *products]
    latest = ledger.backend.select_latest(ledger.app.snapshots.recorder, ids)
    assert set(latest) == set(ids)  # every aggregate has passed an interval
    assert latest[job].originator_version >= 20

    fresh = bootstrap(backends.settings_for(store_url, tmp_path))  # no caches: all from the database
    try:
        floors: list[dict[UUID, int]] = []
        real = fresh.backend.select_after

        def spy(recorder: Any, wanted: Any, after: Any = None) -> Any:
            floors.append(dict(after or {}))
            return real(recorder, wanted, after)

        fresh.backend.select_after = spy  # type: ignore[method-assign]
        try:
            loaded = fresh.app.find_many(Product, products)
        finally:
            del fresh.backend.select_after
        assert floors == [{p: latest[p].originator_version for p in products}]
        assert {p: state(loaded[p]) for p in products} == {p: replayed(fresh.app, p) for p in products}
        assert state(fresh.app.get_job(job)) == replayed(fresh.app, job)
        assert state(fresh.app.get_store(store)) == replayed(fresh.app, store)

        # carrying on from snapshot-loaded state records the same as carrying on from a replay
        crawl(fresh.app, job, range(24, 40))
        for aggregate_id in ids:
            assert state(fresh.app.repository.get(aggregate_id)) == replayed(fresh.app, aggregate_id)
    finally:
        fresh.close()


def refuse_snapshot_inserts(ledger: Ledger) -> None:
    """A trigger that fails every insert into the snapshot table: a real database error
    inside the save's transaction."""
    recorder: Any = ledger.app.snapshots.recorder  # type: ignore[union-attr]
    if ledger.backend.name == "postgresql":
        schema, table = recorder.datastore.schema, recorder.events_table_name
        with recorder.datastore.get_connection() as conn:
            conn.execute(f"CREATE FUNCTION {schema}.refuse() RETURNS trigger LANGUAGE plpgsql "
                         "AS $$ BEGIN RAISE EXCEPTION 'disk full'; END $$")
            conn.execute(f"CREATE TRIGGER refuse BEFORE INSERT ON {schema}.{table} "
                         f"FOR EACH ROW EXECUTE FUNCTION {schema}.refuse()")
            conn.commit()
    else:
        with recorder.datastore.transaction(commit=True) as cursor:
            cursor.execute(f"CREATE TRIGGER refuse BEFORE INSERT ON {recorder.events_table_name} "
                           "BEGIN SELECT RAISE(ABORT, 'disk full'); END")


def test_snapshots_that_cannot_be_written_do_not_fail_the_command(
        ledger: Ledger, caplog: pytest.LogCaptureFixture) -> None:
    """The snapshots are written in the save's transaction, in a savepoint: when the
    database refuses them, the events still commit and the failure is logged."""
    store, job = setup_catalog(ledger.app)
    recorder = ledger.app.snapshots.recorder  # type: ignore[union-attr]
    before = ledger.backend.select_latest(recorder, [store, job])
    refuse_snapshot_inserts(ledger)
    with caplog.at_level(logging.WARNING, logger="eventstore.base"):
        crawl(ledger.app, job, range(1, 8))
    assert "could not write" in caplog.text and "disk full" in caplog.text
    assert ledger.backend.select_latest(recorder, [store, job]) == before
    assert ledger.app.get_job(job).runs == 7  # every result was recorded
    assert state(ledger.app.get_job(job)) == replayed(ledger.app, job)
    fresh = ledger.app.find_many(Product, [UUID(p) for p in ledger.app.get_job(job).products])
    assert fresh and all(state(p) == replayed(ledger.app, p.id) for p in fresh.values())


def test_snapshots_that_cannot_be_taken_do_not_fail_the_command(
        ledger: Ledger, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    def broken(*_: Any, **__: Any) -> None:
        raise RuntimeError("cannot encode")

    monkeypatch.setattr(CrawlJob.Snapshot, "take", broken)
    with caplog.at_level(logging.WARNING, logger="domain.persistence"):
        store, job = setup_catalog(ledger.app)
        crawl(ledger.app, job, range(1, 8))
    assert "could not take" in caplog.text
    assert ledger.backend.select_latest(ledger.app.snapshots.recorder, [job]) == {}
    assert ledger.app.get_job(job).runs == 7
    assert state(ledger.app.get_job(job)) == replayed(ledger.app, job)


@pytest.mark.parametrize("existing", [False, True], ids=["new database", "library's table"])
def test_sqlite_snapshot_table_is_a_rowid_table_and_an_older_one_still_works(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, existing: bool) -> None:
    """A new SQLite ledger's snapshots table keeps its rows in rowid order with the key
    as an index (eventstore.sqlite_factory); a database whose table the library created
    (`WITHOUT ROWID`) keeps that table, and snapshots are written and loaded in both."""
    import sqlite3

    from eventsourcing.sqlite import SQLiteAggregateRecorder

    monkeypatch.setattr(CrawlLedger, "snapshotting_intervals", SMALL)
    path = tmp_path / "ledger.sqlite"
    library_ddl = object.__new__(SQLiteAggregateRecorder)  # only its table statements
    library_ddl.events_table_name = "stored_snapshots"
    if existing:
        with sqlite3.connect(path) as conn:
            for statement in library_ddl.construct_create_table_statements():
                conn.execute(statement)
    url = f"sqlite:///{path}"
    with backends.open_ledger(url, tmp_path) as opened:
        store, job = setup_catalog(opened.app)
        crawl(opened.app, job, range(1, 12))
        products = sorted(UUID(p) for p in opened.app.get_job(job).products)
        latest = opened.backend.select_latest(opened.app.snapshots.recorder, [job, *products])
        assert set(latest) == {job, *products}
    with sqlite3.connect(path) as conn:
        ddl = conn.execute("SELECT sql FROM sqlite_master WHERE name = 'stored_snapshots'"
                           ).fetchone()[0]
        assert ("WITHOUT ROWID" in ddl) is existing
        assert "PRIMARY KEY (originator_id, originator_version)" in ddl
        rows = conn.execute("SELECT count(*) FROM stored_snapshots").fetchone()[0]
        assert rows >= len(products) + 1
    with backends.open_ledger(url, tmp_path) as fresh:
        loaded = fresh.app.find_many(Product, products)
        assert {p: state(loaded[p]) for p in products} == {p: replayed(fresh.app, p) for p in products}
