"""Group commit (`CrawlLedger.record_many`, `runtime.db_thread.GroupCommit`) on both backends:
a group stores exactly what recording each result alone stores, in one transaction; a
refused result fails only itself; two results of one product are both kept; a group
whose transaction conflicts is recorded result by result; workers recording at once
share groups and each gets its own answer."""

from __future__ import annotations

import asyncio
from collections import Counter
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest

from domain import ids
from domain.errors import Conflict, LeaseLost, NotFound
from domain.product import Product
from domain.recording import Recorded, Recording
from domain.values import CrawlFailure, CrawlSuccess, Observation, Offer
from ledger.bootstrap import Ledger
from runtime.db_thread import DbThread

T0 = datetime(2026, 3, 1, 8, 0, tzinfo=UTC)
BASE = "https://shop.example"


def obs(pid: str, price: str = "10.00") -> Observation:
    return Observation(pid, f"Product {pid}", (Offer("1g", Decimal(price), "USD"),), "in_stock")


def success(*observations: Observation) -> CrawlSuccess:
    return CrawlSuccess(200, BASE, "test", "1", "hash", observations=observations)


def leased(ledger: Ledger, count: int, kind: str = "product_page") -> list[tuple[str, str]]:
    app = ledger.app
    store = app.register_store(name="Shop", base_url=BASE, platform="generic", now=T0)
    jobs = [app.schedule_job(kind=kind, url=f"{BASE}/p/{n}", now=T0, store_id=store,
                             every=3600) for n in range(count)]
    return [(str(job), app.lease(job, "w1", 600, T0).lease_id) for job in jobs]


def stored(ledger: Ledger) -> list[tuple[str, int, str]]:
    """(aggregate, version, event type) of every event after the set-up, in order."""
    return [(str(n.originator_id), n.originator_version, n.topic.rsplit(".", 1)[-1])
            for n in ledger.app.recorder.select_notifications(1, 100_000)]


def saves(ledger: Ledger, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The number of aggregates of each `_save` (one per transaction)."""
    seen: list[int] = []
    original = ledger.app._save

    def counting(*aggregates: Any) -> None:
        seen.append(len(aggregates))
        original(*aggregates)

    monkeypatch.setattr(ledger.app, "_save", counting)
    return seen


def test_a_group_stores_what_each_result_alone_stores(ledger: Ledger, store_url: str,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    jobs = leased(ledger, 24)
    now = T0 + timedelta(seconds=5)

    def items(chosen: list[tuple[str, str]], tag: str) -> list[Recording]:
        return [Recording(job, lease, success(obs(f"{tag}{n}"), obs(f"{tag}{n}'")) if n % 3
                          else CrawlFailure("timeout", "slow", True), now)
                for n, (job, lease) in enumerate(chosen)]

    grouped, alone = items(jobs[:12], "g"), items(jobs[12:], "a")
    start = ledger.app.recorder.max_notification_id()
    transactions = saves(ledger, monkeypatch)
    answers = ledger.app.record_many(grouped)
    assert transactions == [12 + 16]  # one transaction: 12 jobs and 16 new products
    middle = ledger.app.recorder.max_notification_id()
    for item in alone:
        if isinstance(item.outcome, CrawlSuccess):
            ledger.app.record_success(item.job_id, item.lease_id, item.outcome, item.now)
        else:
            ledger.app.record_failure(item.job_id, item.lease_id, item.outcome, item.now)
    assert len(transactions) == 1 + 12
    events = stored(ledger)
    by_group = Counter(t for _, _, t in events[start:middle])
    assert by_group == Counter(t for _, _, t in events[middle:])
    assert by_group["Succeeded"] == 8 and by_group["Failed"] == 4
    assert all(isinstance(a, Recorded) and not a.duplicate for a in answers)
    # each job's history reads as if recorded alone
    for (g, _), (a, _) in zip(jobs[:12], jobs[12:]):
        assert ledger.app.get_job(g).state == ledger.app.get_job(a).state
        assert ledger.app.get_job(g).version == ledger.app.get_job(a).version
    # the same results again: duplicates, nothing stored
    head = ledger.app.recorder.max_notification_id()
    assert [a.duplicate for a in ledger.app.record_many(grouped)] == [True] * 12  # type: ignore[union-attr]
    assert ledger.app.recorder.max_notification_id() == head


def test_a_group_looks_its_products_up_once(ledger: Ledger, store_url: str,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """New products (found in no store by the group's one look-up) are not looked for
    again result by result; a product seen before is loaded with the group."""
    jobs = leased(ledger, 10)
    now = T0 + timedelta(seconds=5)
    ledger.app.record_success(jobs[0][0], jobs[0][1], success(obs("old")), now)
    monkeypatch.setattr(ledger.app, "products", type(ledger.app.products)(100))  # not in memory
    looked_up: list[int] = []
    original = ledger.app.find_many

    def counting(cls: Any, ids: Any) -> Any:
        ids = list(ids)
        if cls is Product and ids:
            looked_up.append(len(ids))
        return original(cls, ids)

    monkeypatch.setattr(ledger.app, "find_many", counting)
    items = [Recording(job, lease, success(obs("old" if n == 1 else f"new{n}")), now)
             for n, (job, lease) in enumerate(jobs[1:], start=1)]
    answers = ledger.app.record_many(items)
    assert all(isinstance(a, Recorded) for a in answers)
    assert looked_up == [9]
    store_id = ledger.app.get_job(jobs[1][0]).store_id
    assert ledger.app.get_product(ids.product_id(store_id, "old")).observations == 2


def test_a_refused_result_fails_only_itself(ledger: Ledger, store_url: str) -> None:
    (a, lease_a), (b, lease_b), (c, lease_c) = leased(ledger, 3)
    now = T0 + timedelta(seconds=5)
    answers = ledger.app.record_many([
        Recording(a, lease_a, success(obs("a")), now),
        Recording(b, "not-the-lease", success(obs("b")), now),
        Recording("no-such-job", "x", success(obs("z")), now),
        Recording(c, lease_c, success(obs("c")), now)])
    assert isinstance(answers[0], Recorded) and isinstance(answers[3], Recorded)
    assert isinstance(answers[1], LeaseLost) and isinstance(answers[2], NotFound)
    assert ledger.app.get_job(b).state == "leased"  # nothing of it was stored
    assert ledger.app.get_job(a).state == ledger.app.get_job(c).state == "scheduled"
    del lease_b


def test_two_results_of_one_product_are_both_kept(ledger: Ledger, store_url: str,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    (a, lease_a), (b, lease_b) = leased(ledger, 2)
    now = T0 + timedelta(seconds=5)
    transactions = saves(ledger, monkeypatch)
    answers = ledger.app.record_many([Recording(a, lease_a, success(obs("same", "10.00")), now),
                                      Recording(b, lease_b, success(obs("same", "8.00")), now)])
    assert [a.new_products for a in answers] == [1, 1]  # type: ignore[union-attr]
    assert len(transactions) == 2  # the second could not join the first's transaction
    ledger.catch_up()
    (product,) = ledger.read.products()
    assert Decimal(str(product["min_price"])) == Decimal("8.00")


def test_a_conflicting_group_is_recorded_result_by_result(ledger: Ledger, store_url: str,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    jobs = leased(ledger, 4)
    now = T0 + timedelta(seconds=5)
    original = ledger.app._save
    calls: list[int] = []

    def conflicting_once(*aggregates: Any) -> None:
        calls.append(len(aggregates))
        if len(calls) == 1:
            raise Conflict("another writer got there first")
        original(*aggregates)

    monkeypatch.setattr(ledger.app, "_save", conflicting_once)
    before = ledger.app.recorder.max_notification_id()
    answers = ledger.app.record_many([Recording(j, lease, success(obs(str(j)[:8])), now)
                                      for j, lease in jobs])
    assert len(calls) == 1 + 4 and all(isinstance(a, Recorded) for a in answers)
    assert Counter(t for _, _, t in stored(ledger)[before:]) == {
        "Succeeded": 4, "Rescheduled": 4, "Discovered": 4, "Observed": 4}


def test_workers_recording_at_once_share_groups(ledger: Ledger, store_url: str) -> None:
    jobs = leased(ledger, 40)
    db = DbThread(1)
    group = db.group_commit(ledger.app)
    sizes: list[int] = []
    record_many = ledger.app.record_many

    def recording(items: Any) -> Any:
        sizes.append(len(items))
        return record_many(items)

    ledger.app.record_many = recording  # type: ignore[method-assign]

    async def all_at_once() -> list[Any]:
        now = T0 + timedelta(seconds=5)
        calls = [group.record(Recording(job, lease if n != 7 else "stale", success(obs(f"p{n}")),
                                        now))
                 for n, (job, lease) in enumerate(jobs)]
        return await asyncio.gather(*calls, return_exceptions=True)

    try:
        answers = asyncio.run(all_at_once())
    finally:
        db.close()
    assert isinstance(answers[7], LeaseLost)
    assert sum(isinstance(a, Recorded) for a in answers) == 39
    assert sum(sizes) == 40 and len(sizes) < 40 and max(sizes) > 1


def test_recording_runs_no_cyclic_collection_and_leaves_the_collector_on(
        ledger: Ledger, monkeypatch: pytest.MonkeyPatch) -> None:
    """A recording allocates its events in bulk: no collection runs while it does
    (domain.gcpause), even with a threshold that would collect on every allocation,
    and the collector is on again after it, also after a refused result."""
    import gc
    jobs = leased(ledger, 3)
    now = T0 + timedelta(seconds=5)
    collections: list[str] = []
    in_recording = [False]

    def count(phase: str, info: dict[str, int]) -> None:
        if phase == "start" and in_recording[0]:
            collections.append(f"generation {info['generation']}")

    original = ledger.app._save

    def saving(*aggregates: Any) -> None:
        in_recording[0] = True
        try:
            original(*aggregates)
        finally:
            in_recording[0] = False

    monkeypatch.setattr(ledger.app, "_save", saving)
    threshold = gc.get_threshold()
    gc.callbacks.append(count)
    gc.set_threshold(1)
    try:
        answers = ledger.app.record_many(
            [Recording(job, lease, success(obs(f"p{n}"), obs(f"q{n}")), now)
             for n, (job, lease) in enumerate(jobs[:2])])
        assert gc.isenabled()
        alone = ledger.app.record_success(jobs[2][0], jobs[2][1], success(obs("r")), now)
        assert gc.isenabled()
        with pytest.raises(LeaseLost):
            ledger.app.record_success(jobs[2][0], "not-the-lease", success(obs("s")), now)
        assert gc.isenabled()
    finally:
        gc.set_threshold(*threshold)
        gc.callbacks.remove(count)
    assert all(isinstance(answer, Recorded) and answer.events for answer in answers)
    assert alone.events
    assert collections == []
