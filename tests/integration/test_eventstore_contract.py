"""The event-store adapter contract (eventstore.Backend), run on both backends: batch
loads, snapshot reads, current versions and notification-log reads agree with what
the library itself stores and reads."""

from __future__ import annotations

from datetime import UTC, datetime
from uuid import UUID, uuid4

import pytest

from domain.crawl_job import CrawlJob
from domain.store import Store
from eventstore import Backend, PostgresBackend, SQLiteBackend
from ledger.bootstrap import Ledger

T0 = datetime(2026, 3, 1, 8, 0, tzinfo=UTC)


def seed(ledger: Ledger, stores: int = 3) -> list[UUID]:
    """Stores with 1..n policy changes each: histories of different lengths."""
    app, made = ledger.app, []
    for i in range(stores):
        store_id = app.register_store(name=f"Shop {i}", base_url=f"https://s{i}.example",
                                      platform="shopify", now=T0)
        for delay in range(i + 1):
            app.change_store_policy(store_id, now=T0, crawl_delay=float(delay + 5))
        made.append(store_id)
    return made


def test_the_backend_is_chosen_by_configuration(ledger: Ledger) -> None:
    expected = PostgresBackend if ledger.backend.name == "postgresql" else SQLiteBackend
    assert isinstance(ledger.backend, expected)
    assert "password" not in ledger.backend.describe()
    # the library's persistence (SQLite: its factory and connections, SQLite's default
    # page cache for the event store's writes; the read models' connections keep 512 KiB)
    library = "eventsourcing.postgres" if ledger.backend.name == "postgresql" else "eventsourcing.sqlite"
    assert any(cls.__module__ == library for cls in type(ledger.app.factory).__mro__)
    if ledger.backend.name == "sqlite":
        with ledger.app.recorder.datastore.transaction(commit=True) as cursor:
            cursor.execute("PRAGMA cache_size")
            assert cursor.fetchone()[0] == -2000
        with ledger.db.transaction() as tx:
            assert tx.execute("PRAGMA cache_size") == [{"cache_size": -512}]


def test_select_after_returns_each_stream_from_its_own_version(ledger: Ledger) -> None:
    backend: Backend = ledger.backend
    recorder = ledger.app.recorder
    stores = seed(ledger)
    unknown = uuid4()
    everything = backend.select_after(recorder, [*stores, unknown])
    assert unknown not in everything
    for store_id in stores:
        library = list(recorder.select_events(store_id))
        assert everything[store_id] == library
    after = {stores[2]: 2}
    tail = backend.select_after(recorder, stores, after)
    assert [e.originator_version for e in tail[stores[2]]] == \
        [e.originator_version for e in recorder.select_events(stores[2]) if e.originator_version > 2]
    assert tail[stores[0]] == everything[stores[0]]


def test_select_versions_and_latest(ledger: Ledger) -> None:
    backend, recorder = ledger.backend, ledger.app.recorder
    stores = seed(ledger)
    versions = backend.select_versions(recorder, [*stores, uuid4()])
    assert versions == {s: ledger.app.get_store(s).version for s in stores}
    latest = backend.select_latest(recorder, stores)
    assert {s: e.originator_version for s, e in latest.items()} == versions


def test_changes_after_a_position_where_positions_are_ordered(ledger: Ledger) -> None:
    """SQLite: the head, and of the ids asked for those with events after a position, with
    their highest version there. PostgreSQL says its positions are not ordered."""
    backend, recorder = ledger.backend, ledger.app.recorder
    if not backend.ordered_positions:
        assert backend.name == "postgresql"
        with pytest.raises(NotImplementedError):
            backend.head_position(recorder)
        return
    assert backend.head_position(recorder) == 0
    stores = seed(ledger)
    middle = backend.head_position(recorder)
    assert middle == recorder.max_notification_id()
    ledger.app.disable_store(stores[1], "maintenance", T0)
    ledger.app.enable_store(stores[1], T0)
    head = backend.head_position(recorder)
    assert head == middle + 2
    assert backend.changed_after(recorder, middle, [*stores, uuid4()]) == {
        stores[1]: ledger.app.get_store(stores[1]).version}
    assert backend.changed_after(recorder, head, stores) == {}
    assert backend.changed_after(recorder, 0, stores[:1]) == {
        stores[0]: ledger.app.get_store(stores[0]).version}


def test_notification_rows_follow_the_log_in_order(ledger: Ledger) -> None:
    backend, recorder = ledger.backend, ledger.app.recorder
    seed(ledger)
    job = ledger.app.schedule_job(kind="catalog", url="https://s0.example/products.json", now=T0,
                                  every=3600)
    library = recorder.select_notifications(0, 1000)
    rows = backend.notification_rows(recorder, 0, 1000)
    assert [r[0] for r in rows] == [n.id for n in library]
    assert [(UUID(str(r[1])), r[2], r[3], bytes(r[4])) for r in rows] == \
        [(n.originator_id, n.originator_version, n.topic, n.state) for n in library]
    assert backend.notification_rows(recorder, rows[2][0], 2) == rows[3:5]
    assert isinstance(ledger.app.get_job(job), CrawlJob)


def test_loading_many_aggregates_equals_loading_each(ledger: Ledger) -> None:
    stores = seed(ledger, stores=4)
    many = ledger.app.find_many(Store, stores)
    for store_id in stores:
        one = ledger.app.get_store(store_id)
        assert (many[store_id].version, many[store_id].policy) == (one.version, one.policy)


def test_an_insert_returns_the_notification_ids_it_took(ledger: Ledger) -> None:
    """One save's events get consecutive ids in save order; the recorder returns exactly
    the ids the log shows for them (SQLite's one-`executemany` insert included)."""
    from eventsourcing.persistence import StoredEvent

    recorder = ledger.app.recorder
    seed(ledger, stores=2)
    before = recorder.max_notification_id() or 0
    events = [StoredEvent(uuid4(), version, "domain.store:Store.Enabled", b'{"n":%d}' % version)
              for version in (1, 2, 3) for _ in range(40)]
    ids = recorder.insert_events(events)
    rows = ledger.backend.notification_rows(recorder, before, 1000)
    assert list(ids or []) == [r[0] for r in rows] == list(range(before + 1, before + 121))
    assert [(UUID(str(r[1])), r[2], bytes(r[4])) for r in rows] == \
        [(e.originator_id, e.originator_version, e.state) for e in events]
    assert recorder.insert_events([]) in ([], None)


def test_an_insert_that_conflicts_stores_none_of_its_events(ledger: Ledger) -> None:
    """A save whose batch repeats a stored (id, version) fails whole (COPY on PostgreSQL,
    one `executemany` on SQLite): nothing of it is in the log, and the next save's ids
    follow the log's last one."""
    from eventsourcing.persistence import IntegrityError, StoredEvent

    recorder = ledger.app.recorder
    taken = StoredEvent(uuid4(), 1, "domain.store:Store.Enabled", b'{"n":1}')
    recorder.insert_events([taken])
    before = recorder.max_notification_id() or 0
    fresh = [StoredEvent(uuid4(), 1, "domain.store:Store.Enabled", b'{"n":2}')
             for _ in range(30)]
    with pytest.raises(IntegrityError):
        recorder.insert_events([*fresh[:10], taken, *fresh[10:]])
    assert ledger.backend.notification_rows(recorder, before, 100) == []
    ids = recorder.insert_events(fresh)
    rows = ledger.backend.notification_rows(recorder, before, 100)
    assert list(ids or []) == [r[0] for r in rows] and len(rows) == 30
    assert [r[0] for r in rows] == sorted(r[0] for r in rows)
