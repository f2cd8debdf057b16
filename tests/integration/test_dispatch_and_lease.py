"""`dispatch_and_lease`: the embedded runner's slot, dispatched and leased in one save."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from uuid import UUID

import backends
import pytest

from domain.errors import NotFound
from ledger.bootstrap import Ledger, bootstrap

T0 = datetime(2026, 3, 1, 8, 0, tzinfo=UTC)


def jobs(ledger: Ledger) -> dict[str, UUID]:
    app = ledger.app
    shop = app.register_store(name="Shop", base_url="https://shop.example", platform="shopify", now=T0)
    gone = app.register_store(name="Gone", base_url="https://gone.example", platform="shopify", now=T0)
    made = {
        "due": app.schedule_job(kind="product_page", url="https://shop.example/p/1", now=T0,
                                store_id=shop),
        "also_due": app.schedule_job(kind="catalog", url="https://shop.example/products.json",
                                     now=T0, store_id=shop, every=3600),
        "later": app.schedule_job(kind="product_page", url="https://shop.example/p/2", now=T0,
                                  store_id=shop, start_at=T0 + timedelta(hours=1)),
        "disabled": app.schedule_job(kind="product_page", url="https://gone.example/p/1", now=T0,
                                     store_id=gone),
    }
    app.disable_store(gone, "asked us to stop", T0)
    return {k: UUID(str(v)) for k, v in made.items()}


def another_leases_once_loaded(monkeypatch: pytest.MonkeyPatch, app: Any, other: Ledger,
                                job_id: UUID) -> None:
    """Once `app` has loaded `job_id` (`find_many`), another process leases it first."""
    real = type(app).find_many

    def then_another_leases(self: Any, cls: Any, ids: Any) -> Any:
        found = real(self, cls, ids)
        if job_id in found and other.app.get_job(job_id).state == "scheduled":
            other.app.lease(job_id, "elsewhere", 300, T0)
        return found

    monkeypatch.setattr(type(app), "find_many", then_another_leases)


def test_due_jobs_are_dispatched_and_leased_in_one_transaction(ledger: Ledger) -> None:
    app, made = ledger.app, jobs(ledger)
    head = ledger.source.head()
    tasks = app.dispatch_and_lease(list(made.values()), "runner", 300, T0)
    assert [UUID(t.job_id) for t in tasks] == [made["due"], made["also_due"]]
    recorded = ledger.source.read(head, 100)
    assert [(UUID(e.stream_id), e.event_type) for e in recorded] == [
        (made["due"], "CrawlJob.Dispatched"), (made["due"], "CrawlJob.Leased"),
        (made["also_due"], "CrawlJob.Dispatched"), (made["also_due"], "CrawlJob.Leased"),
        (made["disabled"], "CrawlJob.Skipped")]  # said once, not passed over in silence
    assert {e.payload["reason"] for e in recorded} == {
        "due", f"store {recorded[-1].payload['reason'].split()[1]} is disabled (asked us to stop)"}
    assert all(e.schema_version == 2 for e in recorded if e.event_type != "CrawlJob.Skipped")
    for task in tasks:
        job = app.get_job(task.job_id)
        assert (job.state, job.lease_id, job.worker) == ("leased", task.lease_id, "runner")
        assert task.platform == "shopify" and task.attempt == job.attempt
    assert app.get_job(made["later"]).state == "scheduled"
    skipped = app.get_job(made["disabled"])
    assert skipped.state == "scheduled" and skipped.next_run_at == T0 + timedelta(hours=1)
    head = ledger.source.head()
    assert app.dispatch_and_lease(list(made.values()), "runner", 300, T0) == []  # nothing left
    assert ledger.source.head() == head  # and the skip is not recorded again this cycle


@pytest.mark.parametrize("command", ["dispatch_and_lease", "dispatch_due"])
def test_a_job_changed_by_another_writer_meanwhile_is_skipped(
        ledger: Ledger, monkeypatch: pytest.MonkeyPatch, store_url: str, tmp_path: Path,
        command: str) -> None:
    app, made = ledger.app, jobs(ledger)
    slot = [made["due"], made["also_due"]]
    other = bootstrap(backends.settings_for(store_url, tmp_path))  # another process on the same store
    try:
        another_leases_once_loaded(monkeypatch, app, other, made["also_due"])
        if command == "dispatch_and_lease":
            done = [UUID(t.job_id) for t in app.dispatch_and_lease(slot, "runner", 300, T0)]
        else:
            done = app.dispatch_due(slot, T0)
    finally:
        other.close()
    assert done == [made["due"]]
    kept = app.get_job(made["due"])
    assert (kept.state, kept.worker) == (("leased", "runner") if command == "dispatch_and_lease"
                                         else ("dispatched", None))
    assert app.get_job(made["also_due"]).worker == "elsewhere"


@pytest.mark.parametrize("writer", ["this process", "another process"])
def test_a_store_disabled_after_a_slot_kept_it_refuses_the_next_slot(
        ledger: Ledger, store_url: str, tmp_path: Path, writer: str) -> None:
    app = ledger.app
    shop = app.register_store(name="Shop", base_url="https://shop.example", platform="shopify", now=T0)
    first, second = (app.schedule_job(kind="product_page", url=f"https://shop.example/p/{n}",
                                      now=T0, store_id=shop) for n in (1, 2))
    assert [t.job_id for t in app.dispatch_and_lease([first], "runner", 300, T0)] == [str(first)]
    other = ledger if writer == "this process" else bootstrap(backends.settings_for(store_url, tmp_path))
    try:
        other.app.disable_store(shop, "closed for stocktaking", T0)
    finally:
        if other is not ledger:
            other.close()
    head = ledger.source.head()
    assert app.dispatch_and_lease([second], "runner", 300, T0) == []
    assert [e.event_type for e in ledger.source.read(head, 10)] == ["CrawlJob.Skipped"]


def test_a_slot_takes_its_stores_from_the_last_slot(
        ledger: Ledger, monkeypatch: pytest.MonkeyPatch) -> None:
    app = ledger.app
    shop = app.register_store(name="Shop", base_url="https://shop.example", platform="shopify", now=T0)
    first, second = (app.schedule_job(kind="product_page", url=f"https://shop.example/p/{n}",
                                      now=T0, store_id=shop) for n in (1, 2))
    app.dispatch_and_lease([first], "runner", 300, T0)
    loaded: list[str] = []
    real = type(app).find_many

    def noting(self: Any, cls: Any, ids: Any) -> Any:
        found = real(self, cls, ids)
        loaded.extend(cls.__name__ for _ in found)
        return found

    monkeypatch.setattr(type(app), "find_many", noting)
    tasks = app.dispatch_and_lease([second], "runner", 300, T0)
    assert [(t.job_id, t.platform) for t in tasks] == [(str(second), "shopify")]
    assert loaded == ["CrawlJob"]  # the store came from the cache, still current


@pytest.mark.parametrize("delay", [None, "0.25"])
def test_a_job_of_no_store_is_crawled_with_the_operators_default_delay(
        store_url: str, tmp_path: Path, delay: str | None) -> None:
    """A feed or a store locator belongs to no store: its task carries the default
    politeness, with `LEDGER_DEFAULT_CRAWL_DELAY` where the operator set one; a store's
    job keeps its store's policy."""
    env = {"LEDGER_DEFAULT_CRAWL_DELAY": delay} if delay else {}
    ledger = bootstrap(backends.settings_for(store_url, tmp_path, **env))
    try:
        app = ledger.app
        shop = app.register_store(name="Shop", base_url="https://shop.example",
                                  platform="shopify", now=T0)
        app.change_store_policy(shop, now=T0, crawl_delay=3.0)
        feed = app.schedule_job(kind="feed", url="https://feeds.example/rss.xml", now=T0,
                                every=3600)
        page = app.schedule_job(kind="product_page", url="https://shop.example/p/1", now=T0,
                                store_id=shop)
        tasks = {UUID(t.job_id): t for t in app.dispatch_and_lease([feed, page], "runner", 300, T0)}
        assert tasks[UUID(str(feed))].policy.crawl_delay == (float(delay) if delay else 1.0)
        assert tasks[UUID(str(page))].policy.crawl_delay == 3.0
    finally:
        ledger.close()


def test_a_slot_is_dispatched_in_one_save(ledger: Ledger,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    app, made = ledger.app, jobs(ledger)
    head = ledger.source.head()
    saves = []
    real = app._save

    def counted(*aggregates: Any) -> Any:
        saves.append(len(aggregates))
        return real(*aggregates)

    monkeypatch.setattr(app, "_save", counted)
    dispatched = app.dispatch_due(list(made.values()), T0)
    monkeypatch.undo()
    assert dispatched == [made["due"], made["also_due"]]
    assert saves == [3]  # two Dispatched and the disabled store's Skipped, together
    recorded = [(UUID(e.stream_id), e.event_type) for e in ledger.source.read(head, 100)]
    assert recorded == [(made["due"], "CrawlJob.Dispatched"),
                        (made["also_due"], "CrawlJob.Dispatched"),
                        (made["disabled"], "CrawlJob.Skipped")]
    assert app.dispatch_due(list(made.values()), T0) == []  # nothing due is left
    assert ledger.source.head() == head + 3


def test_dispatching_a_slot_with_an_unknown_job_records_nothing(ledger: Ledger) -> None:
    app, made = ledger.app, jobs(ledger)
    head = ledger.source.head()
    unknown = UUID(int=7)
    with pytest.raises(NotFound, match=f"unknown job id {unknown}"):
        app.dispatch_due([made["due"], unknown], T0)
    assert ledger.source.head() == head
