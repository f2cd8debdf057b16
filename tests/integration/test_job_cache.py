"""The crawl jobs a ledger leased stay in memory for their results (`CrawlLedger.job_cache`;
recorded as a group or one at a time),
on both backends: recording loads none of them again and leaves none in memory; a copy
another writer made stale is never used (one version query finds it out). Products are
kept in memory only for jobs that run again."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any
from uuid import UUID

import backends
import pytest

from domain import ids
from domain.crawl_job import CrawlJob
from domain.errors import LeaseLost
from domain.recording import Recorded, Recording
from domain.values import CrawlFailure, CrawlSuccess, Observation, Offer
from ledger.bootstrap import Ledger

T0 = datetime(2026, 3, 1, 8, 0, tzinfo=UTC)
BASE = "https://shop.example"


def success(pid: str) -> CrawlSuccess:
    observation = Observation(pid, f"Product {pid}", (Offer("1g", Decimal("9.50"), "USD"),),
                              "in_stock")
    return CrawlSuccess(200, BASE, "test", "1", "hash", observations=(observation,))


def scheduled(ledger: Ledger, count: int) -> list[UUID]:
    app = ledger.app
    store = app.register_store(name="Shop", base_url=BASE, platform="generic", now=T0)
    return [app.schedule_job(kind="product_page", url=f"{BASE}/p/{n}", now=T0, store_id=store,
                             every=3600) for n in range(count)]


def job_loads(ledger: Ledger, monkeypatch: pytest.MonkeyPatch) -> list[UUID]:
    """Every crawl job `find_many` loads from the store (replaying its events)."""
    loaded: list[UUID] = []
    original = ledger.app.find_many

    def counting(cls: type[Any], ids: Any) -> Any:
        ids = list(ids)
        if cls is CrawlJob:
            loaded.extend(ids)
        return original(cls, ids)

    monkeypatch.setattr(ledger.app, "find_many", counting)
    return loaded


def replays(ledger: Ledger, monkeypatch: pytest.MonkeyPatch) -> list[UUID]:
    """Every aggregate the repository replays one at a time (`get_job` and the like)."""
    replayed: list[UUID] = []
    original = ledger.app.repository.get

    def counting(aggregate_id: UUID, *args: Any, **kwargs: Any) -> Any:
        replayed.append(aggregate_id)
        return original(aggregate_id, *args, **kwargs)

    monkeypatch.setattr(ledger.app.repository, "get", counting)
    return replayed


@pytest.fixture
def other(store_url: str, tmp_path: Path) -> Iterator[Ledger]:
    """A second ledger on the same event store (another process, e.g. the CLI)."""
    with backends.open_ledger(store_url, tmp_path / "other") as opened:
        yield opened


def test_results_of_jobs_leased_here_load_no_job(ledger: Ledger,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    jobs = scheduled(ledger, 6)
    tasks = ledger.app.dispatch_and_lease(jobs, "w1", 600, T0)
    loads = job_loads(ledger, monkeypatch)
    now = T0 + timedelta(seconds=5)
    answers = ledger.app.record_many([Recording(t.job_id, t.lease_id, success(f"p{n}"), now)
                                      for n, t in enumerate(tasks)])
    assert loads == []
    assert all(isinstance(a, Recorded) and a.new_products == 1 for a in answers)
    for job in jobs:
        assert ledger.app.get_job(job).state == "scheduled"
    # memory holds what is leased, not what was recorded; the recurring jobs' products stay
    assert ledger.app.job_cache.take_many(jobs) == {}
    assert len(ledger.app.products.take_many(
        {ids.product_id(t.store_id or "", f"p{n}") for n, t in enumerate(tasks)})) == 6


def test_products_of_a_one_shot_job_are_not_kept(ledger: Ledger) -> None:
    app = ledger.app
    store = app.register_store(name="Shop", base_url=BASE, platform="generic", now=T0)
    job = app.schedule_job(kind="product_page", url=f"{BASE}/p/once", now=T0, store_id=store)
    (task,) = app.dispatch_and_lease([job], "w1", 600, T0)
    (answer,) = app.record_many([Recording(task.job_id, task.lease_id, success("once"), T0)])
    assert isinstance(answer, Recorded) and answer.new_products == 1
    assert app.get_job(job).state == "completed"
    assert app.products.take_many({ids.product_id(str(store), "once")}) == {}


def test_a_job_another_writer_changed_is_loaded_afresh(ledger: Ledger, other: Ledger,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    first, second = scheduled(ledger, 2)
    held = {t.job_id: t for t in ledger.app.dispatch_and_lease([first, second], "w1", 600, T0)}
    now = T0 + timedelta(seconds=5)
    # elsewhere: the first job's lease is given back and leased again under a new lease,
    # the second one cancelled; the cached copies here know neither
    assert other.app.release_lease(first, held[str(first)].lease_id, "moved", now)
    again = other.app.lease(first, "w2", 600, now)
    other.app.cancel(second, now)
    loads = job_loads(ledger, monkeypatch)
    answers = ledger.app.record_many([
        Recording(str(first), again.lease_id, success("a"), now),
        Recording(str(second), held[str(second)].lease_id, success("b"), now)])
    assert sorted(loads) == sorted([first, second])  # both stale: replayed from the store
    assert isinstance(answers[0], Recorded) and not answers[0].duplicate
    assert isinstance(answers[1], LeaseLost)
    assert ledger.app.get_job(first).state == "scheduled"
    assert ledger.app.get_job(second).state == "cancelled"


def test_one_result_of_a_job_leased_here_loads_no_job(ledger: Ledger, other: Ledger,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """`record_success` / `record_failure` take the job from memory as `record_many`
    does, whether `lease` or `dispatch_and_lease` leased it; a copy another writer
    made stale is replayed, and its result refused as before."""
    first, second, third = scheduled(ledger, 3)
    one = ledger.app.lease(first, "w1", 600, T0)
    (two, three) = ledger.app.dispatch_and_lease([second, third], "w1", 600, T0)
    now = T0 + timedelta(seconds=5)
    other.app.cancel(third, now)  # elsewhere: the copy here does not know
    replayed = replays(ledger, monkeypatch)
    done = ledger.app.record_success(first, one.lease_id, success("a"), now)
    failed = ledger.app.record_failure(second, two.lease_id,
                                       CrawlFailure("timeout", "slow", True), now)
    assert done.new_products == 1 and failed.events
    assert replayed == []
    with pytest.raises(LeaseLost):
        ledger.app.record_success(third, three.lease_id, success("c"), now)
    assert set(replayed) == {third}  # replayed (a refusal is retried: each time afresh)
    assert ledger.app.job_cache.take_many({first, second, third}) == {}
    assert ledger.app.get_job(first).runs == 1
    assert ledger.app.get_job(second).state in {"retry_wait", "scheduled"}
    assert ledger.app.get_job(third).state == "cancelled"
