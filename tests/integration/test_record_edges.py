"""Recording edge cases: late results of lost leases, and a product cache gone stale."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path

import pytest
from backends import LOOPBACK_ENV

from domain import ids
from domain.application import CrawlLedger
from domain.errors import LeaseLost
from domain.values import CrawlFailure, CrawlSuccess, Observation, Offer
from eventstore import SQLiteBackend
from runtime.scheduler import Scheduler

T0 = datetime(2026, 3, 1, 8, 0, tzinfo=UTC)
BASE = "https://shop.example"


def obs(pid: str) -> Observation:
    return Observation(pid, f"Product {pid}", (Offer("1g", Decimal("10.00"), "USD"),), "in_stock")


def success(*observations: Observation, tag: str = "c") -> CrawlSuccess:
    return CrawlSuccess(200, BASE, "test", "1", tag, observations=observations)


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "ledger.sqlite"


def open_app(path: Path) -> CrawlLedger:
    return CrawlLedger(SQLiteBackend(path))


@pytest.fixture
def app(path: Path) -> Iterator[CrawlLedger]:
    ledger = open_app(path)
    yield ledger
    ledger.close()


def test_a_result_for_a_reaped_lease_is_refused_not_taken_for_a_duplicate(app: CrawlLedger) -> None:
    store = app.register_store(name="Shop", base_url=BASE, platform="shopify", now=T0)
    job = app.schedule_job(kind="catalog", url=f"{BASE}/products.json", now=T0, store_id=store,
                           every=3600)
    lease = app.lease(job, "w1", 60, T0).lease_id
    assert app.reap_expired_leases([job], T0 + timedelta(seconds=61)) == [job]
    before = app.recorder.max_notification_id()
    with pytest.raises(LeaseLost):
        app.record_success(job, lease, success(obs("a")), T0 + timedelta(seconds=62))
    with pytest.raises(LeaseLost):
        app.record_failure(job, lease, CrawlFailure("timeout", "slow", True), T0)
    assert app.recorder.max_notification_id() == before


def test_a_product_changed_by_another_process_is_not_judged_from_a_stale_cache(
        app: CrawlLedger, path: Path) -> None:
    store = app.register_store(name="Shop", base_url=BASE, platform="shopify", now=T0)
    catalog = app.schedule_job(kind="catalog", url=f"{BASE}/products.json", now=T0,
                               store_id=store, every=3600, adaptive=False)
    now = T0

    def crawl_catalog(*observations: Observation) -> None:
        nonlocal now
        now = max(now, app.get_job(catalog).next_run_at)
        lease = app.lease(catalog, "w1", 300, now).lease_id
        app.record_success(catalog, lease, success(*observations, tag=f"c{now}"), now)

    crawl_catalog(obs("a"), obs("p"))
    for _ in range(3):
        crawl_catalog(obs("a"))  # p missed three times: out of stock (and cached so)
    product = ids.product_id(str(store), "p")
    assert not app.get_product(product).in_stock

    other = open_app(path)  # another worker process sees p on its product page
    try:
        page = other.schedule_job(kind="product_page", url=f"{BASE}/products/p", now=now,
                                  store_id=store, every=3600)
        lease = other.lease(page, "w2", 300, now).lease_id
        other.record_success(page, lease, success(obs("p"), tag="page"), now)
    finally:
        other.close()
    assert app.get_product(product).in_stock

    crawl_catalog(obs("a"))  # absent again: back in stock means this is a real miss
    names = [type(e).__name__ for e in app.history(product)]
    assert names[-2:] == ["BackInStock", "Missed"]
    assert app.history(product)[-1].consecutive_misses == 1


def test_a_disabled_store_is_neither_dispatched_nor_leased_but_skipped_once(tmp_path: Path) -> None:
    from ledger.bootstrap import bootstrap
    from ledger.settings import Settings

    ledger = bootstrap(Settings.from_env({**LOOPBACK_ENV, "LEDGER_DATA_DIR": str(tmp_path / "d")}))
    try:
        app = ledger.app
        store = app.register_store(name="Shop", base_url=BASE, platform="shopify", now=T0)
        job = app.schedule_job(kind="catalog", url=f"{BASE}/products.json", now=T0,
                               store_id=store, every=3600)
        app.disable_store(store, "asked us to stop", T0)
        ledger.catch_up()
        before = app.recorder.max_notification_id()
        with pytest.raises(Exception, match="disabled"):
            app.lease(job, "w1", 60, T0)
        assert app.recorder.max_notification_id() == before
        # the scheduler records the due run as skipped, once, and the job waits a cycle
        assert Scheduler(ledger).tick(T0) == []
        assert [e.event_type for e in ledger.source.read(before, 10)] == ["CrawlJob.Skipped"]
        assert Scheduler(ledger).tick(T0) == []
        assert app.recorder.max_notification_id() == before + 1
        app.enable_store(store, T0)
        ledger.catch_up()
        assert ledger.read.due_jobs(T0) == []  # its next cycle
        later = T0 + timedelta(hours=1)
        assert [r["job_id"] for r in ledger.read.due_jobs(later)] == [str(job)]
        assert Scheduler(ledger).tick(later) == [job]
    finally:
        ledger.close()


def test_an_unusable_locator_entry_is_skipped_not_fatal(app: CrawlLedger) -> None:
    from domain.values import DiscoveredStore

    job = app.schedule_job(kind="store_discovery", url="https://locator.example/stores.json",
                           now=T0, every=86400)
    lease = app.lease(job, "w1", 60, T0).lease_id
    stores = (DiscoveredStore("Odd", "https://odd.example", "magento", "https://odd.example/"),
              DiscoveredStore("Good", "https://good.example", "shopify", "https://good.example/"))
    result = app.record_success(job, lease, CrawlSuccess(
        200, "https://locator.example/stores.json", "locator", "1", "h", stores=stores), T0)
    assert len(result.children) == 1
    assert app.get_store(ids.store_id("https://good.example")).name == "Good"
