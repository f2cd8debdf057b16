"""Product through the application: discovery, prices, misses, out of stock and back.

The application runs on an in-memory SQLite event store here — only as a fast
event store for unit tests; the backends themselves are tested in integration.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest

from domain import ids
from domain.application import CrawlLedger
from domain.product import MISSES_FOR_OUT_OF_STOCK, Product
from domain.values import CrawlFailure, CrawlSuccess, Observation, Offer
from eventstore import SQLiteBackend

T0 = datetime(2026, 3, 1, 8, 0, tzinfo=UTC)


@pytest.fixture
def app() -> Iterator[CrawlLedger]:
    ledger = CrawlLedger(SQLiteBackend(Path(":memory:")))
    yield ledger
    ledger.close()


class Catalog:
    """One store with one catalog job, crawled cycle after cycle."""

    def __init__(self, app: CrawlLedger, base_url: str = "https://shop.example") -> None:
        self.app = app
        self.now = T0
        self.store_id = app.register_store(name="Shop", base_url=base_url, platform="shopify",
                                           now=T0)
        self.job_id = app.schedule_job(kind="catalog", url=f"{base_url}/products.json", now=T0,
                                       store_id=self.store_id, every=3600, adaptive=False)
        self.cycle = 0

    def _lease(self) -> str:
        self.now = max(self.now, self.app.get_job(self.job_id).next_run_at)
        return self.app.lease(self.job_id, "w1", 300, self.now).lease_id

    def crawl(self, *observations: Observation) -> None:
        self.cycle += 1
        lease_id = self._lease()
        self.app.record_success(self.job_id, lease_id, CrawlSuccess(
            http_status=200, final_url="https://shop.example/products.json", extractor="test",
            extractor_version="1", content_hash=f"c{self.cycle}", observations=observations,
        ), self.now)

    def fail(self) -> None:
        lease_id = self._lease()
        self.app.record_failure(self.job_id, lease_id,
                                CrawlFailure("http_5xx", "502 Bad Gateway", True), self.now)

    def product_id(self, provider_id: str) -> UUID:
        return ids.product_id(str(self.store_id), provider_id)

    def events(self, provider_id: str) -> list[object]:
        return self.app.history(self.product_id(provider_id))

    def event_names(self, provider_id: str) -> list[str]:
        return [type(e).__name__ for e in self.events(provider_id)]


def obs(pid: str, price: str = "10.00", availability: str = "in_stock",
        name: str | None = None, currency: str = "USD") -> Observation:
    return Observation(provider_product_id=pid, name=name or f"Product {pid}",
                       offers=(Offer("1g", Decimal(price), currency),),
                       availability=availability)


def test_product_id_is_derived_from_store_and_provider_id(app: CrawlLedger) -> None:
    shop, other = Catalog(app), Catalog(app, "https://other.example")
    shop.crawl(obs("p1"))
    other.crawl(obs("p1"))
    expected = ids.product_id(str(shop.store_id), "p1")
    assert Product.create_id(str(shop.store_id), "p1") == expected
    assert app.get_product(expected).provider_product_id == "p1"
    assert app.get_product(expected).store_id == str(shop.store_id)
    assert other.product_id("p1") != expected
    shop.crawl(obs("p1", "11.00"))  # re-discovery finds the same stream
    assert shop.event_names("p1") == ["Discovered", "Observed", "PriceChanged", "Observed"]


def test_absent_from_three_successful_crawls_goes_out_of_stock(app: CrawlLedger) -> None:
    shop = Catalog(app)
    shop.crawl(obs("a"), obs("b"))
    shop.crawl(obs("a"))
    shop.crawl(obs("a"))
    assert app.get_product(shop.product_id("b")).in_stock
    shop.crawl(obs("a"))
    events = shop.events("b")
    assert [type(e).__name__ for e in events] == [
        "Discovered", "Observed", "Missed", "Missed", "Missed", "WentOutOfStock"]
    assert [e.consecutive_misses for e in events[2:5]] == [1, 2, 3]
    assert events[-1].reason == "misses" and events[-1].job_id == str(shop.job_id)
    product = app.get_product(shop.product_id("b"))
    assert not product.in_stock and product.out_of_stock_since == shop.now
    assert product.consecutive_misses == MISSES_FOR_OUT_OF_STOCK
    # seen unchanged by the same catalog job: in each crawl's Sightings, not its stream
    assert shop.event_names("a") == ["Discovered", "Observed"]


def test_failed_crawl_is_never_a_miss(app: CrawlLedger) -> None:
    shop = Catalog(app)
    shop.crawl(obs("a"), obs("b"))
    shop.crawl(obs("a"))
    before = len(shop.events("b"))
    shop.fail()
    assert len(shop.events("b")) == before
    shop.crawl(obs("a"))
    assert app.get_product(shop.product_id("b")).consecutive_misses == 2
    assert app.get_product(shop.product_id("b")).in_stock
    shop.crawl(obs("a"))
    assert shop.event_names("b")[-2:] == ["Missed", "WentOutOfStock"]


def test_seen_again_resets_misses_and_comes_back_in_stock(app: CrawlLedger) -> None:
    shop = Catalog(app)
    shop.crawl(obs("a"), obs("b"))
    shop.crawl(obs("a"))
    shop.crawl(obs("a"), obs("b"))  # one miss, then seen: counter resets
    assert app.get_product(shop.product_id("b")).consecutive_misses == 0
    for _ in range(MISSES_FOR_OUT_OF_STOCK + 2):  # absences after going out add nothing
        shop.crawl(obs("a"))
    assert shop.event_names("b").count("WentOutOfStock") == 1
    assert shop.event_names("b").count("Missed") == 1 + MISSES_FOR_OUT_OF_STOCK
    shop.crawl(obs("a"), obs("b"))
    names = shop.event_names("b")
    assert names[-2:] == ["Observed", "BackInStock"]
    product = app.get_product(shop.product_id("b"))
    assert product.in_stock and product.out_of_stock_since is None
    assert product.consecutive_misses == 0


def test_price_change_records_old_and_new_decimal_with_currency(app: CrawlLedger) -> None:
    shop = Catalog(app)
    shop.crawl(obs("a", "45.00"))
    shop.crawl(obs("a", "45.00"))
    assert "PriceChanged" not in shop.event_names("a")
    shop.crawl(obs("a", "39.50"))
    changes = [e for e in shop.events("a") if type(e).__name__ == "PriceChanged"]
    assert len(changes) == 1
    (change,) = changes
    assert (change.option, change.old, change.new, change.currency) == (
        "1g", Decimal("45.00"), Decimal("39.50"), "USD")
    assert isinstance(change.old, Decimal) and isinstance(change.new, Decimal)
    assert app.get_product(shop.product_id("a")).offers["regular:1g"]["price"] == Decimal("39.50")


def test_store_saying_out_of_stock_goes_out_at_once(app: CrawlLedger) -> None:
    shop = Catalog(app)
    shop.crawl(obs("a"))
    shop.crawl(obs("a", availability="out_of_stock"))
    events = shop.events("a")
    assert [type(e).__name__ for e in events][-2:] == ["Observed", "WentOutOfStock"]
    assert events[-1].reason == "feed_says"
    shop.crawl(obs("a", availability="out_of_stock"))
    assert shop.event_names("a").count("WentOutOfStock") == 1
    shop.crawl(obs("a", availability="in_stock"))
    assert shop.event_names("a")[-1] == "BackInStock"


def test_details_change_is_recorded(app: CrawlLedger) -> None:
    shop = Catalog(app)
    shop.crawl(obs("a", name="Old name"))
    shop.crawl(obs("a", name="New name"))
    change = [e for e in shop.events("a") if type(e).__name__ == "DetailsChanged"]
    assert [c.fields for c in change] == [{"name": "New name"}]
    assert app.get_product(shop.product_id("a")).name == "New name"


def test_product_events_are_saved_with_the_job_result(app: CrawlLedger) -> None:
    shop = Catalog(app)
    head = app.recorder.max_notification_id() or 0
    shop.crawl(obs("a"), obs("b"))
    stored = app.recorder.select_notifications(start=head + 1, limit=100)
    types = [n.topic.split(":")[-1] for n in stored]
    assert types.count("Product.Discovered") == 2 and "CrawlJob.Succeeded" in types
    succeeded = [e for e in app.history(shop.job_id) if type(e).__name__ == "Succeeded"][-1]
    assert sorted(succeeded.new_products) == sorted(
        [str(shop.product_id("a")), str(shop.product_id("b"))])


def test_a_product_page_that_is_gone_takes_the_product_out_and_keeps_the_job(
        app: CrawlLedger) -> None:
    shop = Catalog(app)
    url = "https://shop.example/products/p9"
    page = app.schedule_job(kind="product_page", url=url, now=T0, store_id=shop.store_id,
                            every=3600, adaptive=False)

    def crawl_page(**outcome: object) -> None:
        now = app.get_job(page).next_run_at
        lease = app.lease(page, "w1", 300, now).lease_id
        app.record_success(page, lease, CrawlSuccess(
            final_url=url, extractor="test", extractor_version="1", **outcome), now)  # type: ignore[arg-type]

    crawl_page(http_status=200, content_hash="c1", observations=(obs("p9"),))
    crawl_page(http_status=404, content_hash="gone:404", gone=True)
    crawl_page(http_status=404, content_hash="gone:404", gone=True)  # still gone: nothing new
    events = shop.events("p9")
    assert [type(e).__name__ for e in events] == ["Discovered", "Observed", "WentOutOfStock"]
    assert events[-1].reason == "gone" and events[-1].job_id == str(page)
    assert app.get_job(page).state == "scheduled"  # the page is checked again, not dead
    crawl_page(http_status=200, content_hash="c2", observations=(obs("p9"),))
    assert shop.event_names("p9")[-2:] == ["Observed", "BackInStock"]


def sightings(app: CrawlLedger) -> list[Any]:
    return [e for e in app.recorder.select_notifications(start=1, limit=10_000)
            if e.topic.endswith("Sightings.Recorded")]


def sighted_products(app: CrawlLedger) -> list[list[str]]:
    return [json.loads(n.state)["products"] for n in sightings(app)]


def test_an_unchanged_sighting_is_in_the_crawls_sightings_not_the_product_stream(
        app: CrawlLedger) -> None:
    shop = Catalog(app)
    shop.crawl(obs("a"), obs("b"))
    assert sightings(app) == []  # first sight: per product
    shop.crawl(obs("a"), obs("b", "12.00"))
    a, b = str(shop.product_id("a")), str(shop.product_id("b"))
    assert sighted_products(app) == [[a]]
    state = json.loads(sightings(app)[0].state)
    assert state["versions"] == [2] and state["job_id"] == str(shop.job_id)
    assert state["offers"] == [[["1g", "10.00", "USD", None, "regular", None, None]]]
    assert state["content_hash"] == "c2" and state["availability"] == ["in_stock"]
    assert shop.event_names("b")[-2:] == ["PriceChanged", "Observed"]
    shop.crawl(obs("a", "10.0"), obs("b", "12.00"))  # the same amount, written otherwise
    assert sighted_products(app)[-1] == [b]
    assert shop.event_names("a") == ["Discovered", "Observed", "Observed"]


def test_a_sighting_after_a_miss_or_by_another_job_is_per_product(app: CrawlLedger) -> None:
    shop = Catalog(app)
    shop.crawl(obs("a"), obs("b"))
    shop.crawl(obs("a"))
    shop.crawl(obs("a"), obs("b"))  # resets its misses: an event
    assert shop.event_names("b") == ["Discovered", "Observed", "Missed", "Observed"]
    deals = app.schedule_job(kind="catalog", url="https://shop.example/deals.json", now=T0,
                             store_id=shop.store_id, every=3600, adaptive=False)
    now = app.get_job(deals).next_run_at
    app.record_success(deals, app.lease(deals, "w1", 300, now).lease_id, CrawlSuccess(
        200, "https://shop.example/deals.json", "test", "1", "d1", observations=(obs("b"),)), now)
    assert shop.event_names("b")[-1] == "Observed"  # another job saw it: per product
    shop.crawl(obs("a"), obs("b"))  # and its own job sees it again after that: per product
    assert shop.event_names("b").count("Observed") == 4
    assert app.get_product(shop.product_id("b")).last_seen_by == str(shop.job_id)


def test_without_compact_sightings_every_observation_is_per_product(app: CrawlLedger) -> None:
    app.options = replace(app.options, compact_sightings=False)
    shop = Catalog(app)
    for _ in range(3):
        shop.crawl(obs("a"))
    assert shop.event_names("a") == ["Discovered"] + ["Observed"] * 3
    assert sightings(app) == []
