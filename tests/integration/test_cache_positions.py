"""Cached products are checked against the events stored after the position they are
known current through (SQLite, whose notification ids become visible in order), else by
their version (PostgreSQL, or a position too far behind or past the store's head); either
way a copy another writer changed is never used, including a copy the result would
write nothing for, which no conflict would catch."""

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
from domain.product import MISSES_FOR_OUT_OF_STOCK, Product
from domain.values import CrawlSuccess, Observation, Offer
from ledger.bootstrap import Ledger

T0 = datetime(2026, 3, 1, 8, 0, tzinfo=UTC)
BASE = "https://shop.example"


def catalog(*pids: str) -> CrawlSuccess:
    return CrawlSuccess(200, f"{BASE}/products.json", "test", "1", "hash", observations=tuple(
        Observation(pid, f"Product {pid}", (Offer("1g", Decimal("9.50"), "USD"),), "in_stock")
        for pid in pids))


class Shop:
    """A store with a recurring catalog job, its results recorded as it falls due."""

    def __init__(self, ledger: Ledger, base: str = BASE) -> None:
        self.app = ledger.app
        self.store = str(self.app.register_store(name="Shop", base_url=base,
                                                 platform="generic", now=T0))
        self.job = self.app.schedule_job(kind="catalog", url=f"{base}/products.json", now=T0,
                                         store_id=self.store, every=3600)
        self.now = T0

    def record(self, *pids: str) -> None:
        self.now = max(self.now, self.app.get_job(self.job).next_run_at or T0)
        task = self.app.lease(self.job, "w1", 600, self.now)
        self.app.record_success(self.job, task.lease_id, catalog(*pids), self.now)

    def product(self, ledger: Ledger, pid: str) -> Product:
        return ledger.app.get_product(ids.product_id(self.store, pid))


@pytest.fixture
def other(store_url: str, tmp_path: Path) -> Iterator[Ledger]:
    """A second ledger on the same event store (another process, e.g. a bot's submit)."""
    with backends.open_ledger(store_url, tmp_path / "other") as opened:
        yield opened


def version_queries(ledger: Ledger, monkeypatch: pytest.MonkeyPatch) -> list[set[UUID]]:
    asked: list[set[UUID]] = []
    original = ledger.app.storage.select_versions

    def counting(recorder: Any, aggregate_ids: Any) -> Any:
        asked.append(set(aggregate_ids))
        return original(recorder, aggregate_ids)

    monkeypatch.setattr(ledger.app.storage, "select_versions", counting)
    return asked


def sold_out(ledger: Ledger) -> Shop:
    """"c" seen once, then missed until out of stock; its copy here says so."""
    shop = Shop(ledger)
    shop.record("a", "b", "c")
    for _ in range(MISSES_FOR_OUT_OF_STOCK):
        shop.record("a", "b")
    assert not shop.product(ledger, "c").in_stock
    return shop


def back_in_stock(other: Ledger, shop: Shop, seen: int) -> None:
    """Elsewhere, a product-page job of the same store sees "c" again."""
    now = shop.now + timedelta(minutes=1)
    page = other.app.schedule_job(kind="product_page", url=f"{BASE}/p/c?seen={seen}", now=now,
                                  store_id=shop.store)
    task = other.app.lease(page, "w2", 600, now)
    other.app.record_success(page, task.lease_id, catalog("c"), now)


def test_a_copy_changed_elsewhere_is_not_used_where_the_result_writes_nothing_for_it(
        ledger: Ledger, other: Ledger) -> None:
    shop = sold_out(ledger)
    back_in_stock(other, shop, 0)
    # the catalog still lacks "c": the copy here (out of stock) would miss it silently;
    # the stored product is in stock again, so this result counts a miss
    shop.record("a", "b")
    c = shop.product(ledger, "c")
    assert c.in_stock and c.consecutive_misses == 1


def test_a_change_made_while_a_result_was_recorded_is_seen_by_the_next_one(
        ledger: Ledger, other: Ledger, monkeypatch: pytest.MonkeyPatch) -> None:
    """Another writer changes a product after this result loaded it and before its save:
    the save's ids then do not follow the position read first, and its products are
    kept as current through that position only, so the next result sees the change."""
    shop = sold_out(ledger)
    save = ledger.app._save
    saves: list[int] = []

    def interleaved(*aggregates: Any) -> Any:
        saves.append(len(aggregates))
        if len(saves) == 2:  # the result's save (the lease's is the first)
            back_in_stock(other, shop, 0)
        return save(*aggregates)

    monkeypatch.setattr(ledger.app, "_save", interleaved)
    shop.record("a", "b")
    monkeypatch.undo()
    # the lease's job; the result's job and its crawl's Sightings (a and b unchanged)
    assert saves == [1, 2]
    shop.record("a", "b")
    c = shop.product(ledger, "c")
    assert c.in_stock and c.consecutive_misses == 1


def test_on_sqlite_cached_products_need_no_version_query(
        ledger: Ledger, monkeypatch: pytest.MonkeyPatch) -> None:
    shop = Shop(ledger)
    shop.record("a", "b", "c")
    asked = version_queries(ledger, monkeypatch)
    shop.record("a", "b", "c")
    products = {ids.product_id(shop.store, pid) for pid in "abc"}
    if ledger.backend.name == "sqlite":
        assert asked == []
    else:  # PostgreSQL: ids may become visible out of order; one query checks them all
        assert products in asked
    assert len(ledger.app.products.take_many(products)) == 3


@pytest.fixture
def sqlite_pair(tmp_path: Path) -> Iterator[tuple[Ledger, Ledger]]:
    """Two ledgers on one SQLite event store (positions are used on SQLite only)."""
    with backends.store_url("sqlite", tmp_path) as url, \
            backends.open_ledger(url, tmp_path) as ledger, \
            backends.open_ledger(url, tmp_path / "other") as other:
        yield ledger, other


def test_a_position_far_behind_or_past_the_head_is_checked_by_version(
        sqlite_pair: tuple[Ledger, Ledger], monkeypatch: pytest.MonkeyPatch) -> None:
    ledger, other = sqlite_pair
    assert ledger.backend.name == "sqlite"
    shop = Shop(ledger)
    shop.record("a", "b", "c")
    products = {ids.product_id(shop.store, pid) for pid in "abc"}
    app = ledger.app
    head = app.head_position()
    assert head is not None
    copies = app.products.take_many(products)
    asked = version_queries(ledger, monkeypatch)
    # past the store's head (a store replaced underneath): checked by version, kept
    app.products.put_many(copies.values(), head + 10)
    assert app.fresh_cached(app.products, products).keys() == products
    assert asked == [products]
    # far behind: more events after it than are worth reading; "c" changed among them
    app.products.put_many(copies.values(), head)
    back_in_stock(other, shop, 0)
    filler = Shop(other, "https://other.example")
    filler.record(*(f"f{n}" for n in range(300)))
    assert app.fresh_cached(app.products, products).keys() == products - {
        ids.product_id(shop.store, "c")}
    assert len(asked) == 2
    # close behind: the events after it are read, "c" found changed again
    app.products.put_many(copies.values(), app.head_position())
    back_in_stock(other, shop, 1)
    assert app.fresh_cached(app.products, products).keys() == products - {
        ids.product_id(shop.store, "c")}
    assert len(asked) == 2
