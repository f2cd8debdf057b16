"""Parquet datasets of a real simulated crawl, every named query checked against the simulator's truth.

Four stores (dispensary, Shopify, WooCommerce, JSON-LD in EUR) are crawled
by the embedded runner over eight cycles on a simulated clock (6 h apart,
so the data spans two dates); store-1 answers HTTP 500 throughout epoch 2.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import duckdb
import pytest
from backends import LOOPBACK_ENV

from analytics import (
    as_of,
    connect,
    crawl_health,
    out_of_stock_durations,
    price_changes_in,
    price_history,
    store_summary,
)
from domain.product import MISSES_FOR_OUT_OF_STOCK
from ledger.bootstrap import Ledger, bootstrap, crawler_for
from ledger.drivers.embedded import EmbeddedRunner
from ledger.settings import Settings
from projections.datasets import DatasetWriter
from runtime.clock import SimulatedClock
from simulator import SimulatorThread

T0 = datetime(2026, 3, 1, 8, 0, tzinfo=UTC)
INTERVAL = 6 * 3600
CYCLES = 8
FAULTY = ("store-1", 2)


@dataclass
class World:
    con: duckdb.DuckDBPyConnection
    truth: dict[int, dict[str, Any]]  # epoch -> truth document
    store_keys: dict[str, str]  # store id -> simulator key
    root: Path

    def epoch(self, moment: datetime) -> int:
        return int((moment - T0).total_seconds()) // INTERVAL

    def crawled(self, store_id: str) -> list[int]:
        rows = self.con.sql("SELECT DISTINCT observed_at FROM price_observations "
                            "WHERE store_id = $s ORDER BY 1", params={"s": store_id}).fetchall()
        return [self.epoch(r[0]) for r in rows]

    def products(self, store_id: str, epoch: int) -> dict[str, Any]:
        return self.truth[epoch]["stores"][self.store_keys[store_id]]["products"]


async def _cycle(ledger: Ledger, settings: Settings, clock: SimulatedClock) -> None:
    async with crawler_for(settings) as crawler:
        runner = EmbeddedRunner(ledger, crawler, clock, concurrency=4, tick_seconds=0.02)
        await runner.run(until_idle=True)


def _register(ledger: Ledger, sim: SimulatorThread, clock: SimulatedClock) -> dict[str, str]:
    keys = {}
    for store in sim.urls.stores:
        store_id = ledger.app.register_store(name=store.spec.name, base_url=store.base_url,
                                             platform=store.platform, now=clock.now(),
                                             crawl_delay=0)
        dispensary = store.platform == "dispensary"
        ledger.app.schedule_job(kind="entry_point" if dispensary else "catalog",
                                url=store.entry_url, store_id=store_id, now=clock.now(),
                                every=None if dispensary else INTERVAL, adaptive=False)
        keys[str(store_id)] = store.key
    return keys


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    data_dir = tmp_path_factory.mktemp("simulated")
    settings = Settings.from_env({**LOOPBACK_ENV, "LEDGER_DATA_DIR": str(data_dir),
                                  "LEDGER_CATALOG_INTERVAL": str(INTERVAL)})
    ledger = bootstrap(settings)
    clock = SimulatedClock(T0)
    faults = {FAULTY[0]: {"epochs": {FAULTY[1]: "http_500"}}}
    try:
        with SimulatorThread(stores=4, seed=7, faults=faults) as sim:
            keys = _register(ledger, sim, clock)
            truth = {}
            for epoch in range(CYCLES):
                sim.simulator.set_epoch(epoch)
                truth[epoch] = sim.simulator.truth(epoch)
                asyncio.run(_cycle(ledger, settings, clock))
                clock.advance(INTERVAL)
        DatasetWriter(data_dir, ledger.source, ledger.tables.dataset_manifests, batch_size=200).catch_up()
    finally:
        ledger.close()
    con = connect(data_dir / "datasets")
    yield World(con, truth, keys, data_dir / "datasets")
    con.close()


def _regular(rows: list[dict[str, Any]]) -> dict[str, Decimal]:
    return {r["option"]: r["price"] for r in rows if r["pricing_type"] in ("regular", "rec")}


def test_datasets_span_two_dates_in_hive_partitions(world: World) -> None:
    dates = sorted(p.name for p in (world.root / "price_observations").iterdir())
    assert dates == ["date=2026-03-01", "date=2026-03-02", "date=2026-03-03"]


def test_price_history_equals_truth_at_every_crawled_epoch(world: World) -> None:
    for store_id in world.store_keys:
        epochs = world.crawled(store_id)
        assert len(epochs) >= CYCLES - 2
        product_id, provider_id = world.con.sql(
            "SELECT product_id, provider_product_id FROM price_observations WHERE store_id = $s "
            "ORDER BY position LIMIT 1", params={"s": store_id}).fetchall()[0]
        history = price_history(world.con, product_id).to_pylist()
        for epoch in epochs:
            truth = world.products(store_id, epoch).get(provider_id)
            seen = [r for r in history if world.epoch(r["observed_at"]) == epoch]
            if truth is None:  # hidden from the catalog at this epoch: not observed
                assert seen == []
                continue
            assert _regular(seen) == {o["option"]: Decimal(o["price"]) for o in truth["offers"]}


def _truth_changes(world: World) -> list[tuple[float, str, str]]:
    """Every regular-price change between consecutive observations, from the truth (a
    dispensary menu prices its medical menu at the regular price too: an offer each)."""
    changes = []
    for store_id in world.store_keys:
        last: dict[tuple[str, str], Decimal] = {}
        epochs = world.crawled(store_id)
        menus = 2 if epochs and world.truth[epochs[0]]["stores"][world.store_keys[store_id]][
            "platform"] == "dispensary" else 1
        for epoch in epochs:
            for provider_id, product in world.products(store_id, epoch).items():
                for offer in product["offers"]:
                    key, price = (provider_id, offer["option"]), Decimal(offer["price"])
                    if key in last and last[key] != price:
                        pct = round(float(100 * (price - last[key]) / last[key]), 2)
                        changes += [(pct, provider_id, offer["option"])] * menus
                    last[key] = price
    return sorted(changes)


def test_largest_drop_and_rise_equal_the_simulators(world: World) -> None:
    start, end = T0, T0 + timedelta(days=30)
    changes = _truth_changes(world)
    assert changes and changes[0][0] < 0 < changes[-1][0]
    (drop,) = price_changes_in(world.con, start, end, limit=1, direction="drop").to_pylist()
    (rise,) = price_changes_in(world.con, start, end, limit=1, direction="rise").to_pylist()
    assert drop["pct_change"] == changes[0][0]
    assert rise["pct_change"] == changes[-1][0]
    provider = {r[0]: r[1] for r in world.con.sql(
        "SELECT DISTINCT product_id, provider_product_id FROM price_observations").fetchall()}
    assert (changes[0][0], provider[drop["product_id"]], drop["option"]) in changes
    every_drop = price_changes_in(world.con, start, end, limit=1000, direction="drop")
    assert every_drop.num_rows == sum(1 for c in changes if c[0] < 0)


def test_store_summary_counts_match_truth(world: World) -> None:
    summary = store_summary(world.con).to_pylist()
    for store_id in world.store_keys:
        epochs = world.crawled(store_id)
        seen = {pid for e in epochs for pid in world.products(store_id, e)}
        rows = [r for r in summary if r["store_id"] == store_id]
        assert sum(r["products"] for r in rows) == len(seen)
        assert sum(r["in_stock"] for r in rows) == _truth_in_stock(world, store_id, epochs)


def _truth_in_stock(world: World, store_id: str, epochs: list[int]) -> int:
    """The domain's rule replayed on the truth: out when the store says so or after 3 misses."""
    state: dict[str, tuple[bool, int]] = {}  # provider id -> (in stock, consecutive misses)
    for epoch in epochs:
        listed = world.products(store_id, epoch)
        for pid, product in listed.items():
            state[pid] = (product["availability"] == "in_stock", 0)
        for pid, (in_stock, misses) in state.items():
            if pid not in listed and in_stock:
                state[pid] = (misses + 1 < MISSES_FOR_OUT_OF_STOCK, misses + 1)
    return sum(1 for in_stock, _ in state.values() if in_stock)


def test_out_of_stock_periods_follow_the_truth(world: World) -> None:
    periods = out_of_stock_durations(world.con).to_pylist()
    assert any(p["reason"] == "feed_says" for p in periods)
    for period in periods:
        store_id = period["store_id"]
        epoch = world.epoch(period["out_since"])
        product = world.products(store_id, epoch).get(period["provider_product_id"])
        if period["reason"] == "feed_says":
            assert product is not None and product["availability"] == "out_of_stock"
        else:
            assert product is None  # gone from the catalog for three crawls
        if period["back_at"] is not None:
            back = world.products(store_id, world.epoch(period["back_at"]))
            assert back[period["provider_product_id"]]["availability"] == "in_stock"
            hours = (period["back_at"] - period["out_since"]).total_seconds() / 3600
            assert period["hours"] == hours and not period["still_out"]
    one_store = next(iter(world.store_keys))
    assert {p["store_id"] for p in out_of_stock_durations(world.con, one_store).to_pylist()} \
        <= {one_store}


def test_as_of_returns_what_was_known_then(world: World) -> None:
    store_id = next(s for s, k in world.store_keys.items() if k == "store-2")
    product_id, provider_id = world.con.sql(
        "SELECT product_id, provider_product_id FROM price_observations WHERE store_id = $s "
        "ORDER BY position LIMIT 1", params={"s": store_id}).fetchall()[0]
    for epoch in world.crawled(store_id)[:-1]:
        moment = T0 + timedelta(seconds=epoch * INTERVAL + INTERVAL // 2)
        known = as_of(world.con, product_id, moment).to_pylist()
        last_seen = max(e for e in world.crawled(store_id) if e <= epoch
                        and provider_id in world.products(store_id, e))
        truth = world.products(store_id, last_seen)[provider_id]
        assert {r["option"]: r["price"] for r in known} == \
            {o["option"]: Decimal(o["price"]) for o in truth["offers"]}
        assert all(world.epoch(r["observed_at"]) == last_seen for r in known)
    assert as_of(world.con, product_id, T0 - timedelta(hours=1)).num_rows == 0


def test_crawl_health_shows_the_injected_fault(world: World) -> None:
    health = crawl_health(world.con).to_pylist()
    faulty = next(s for s, k in world.store_keys.items() if k == FAULTY[0])
    failing = [r for r in health if r["failed"]]
    assert [r["store_id"] for r in failing] == [faulty]
    assert failing[0]["failures_by_kind"] == "http_5xx 1"
    assert failing[0]["day"] == (T0 + timedelta(seconds=FAULTY[1] * INTERVAL)).date()
    total = world.con.sql("SELECT count(*) FROM job_runs").fetchall()[0][0]
    assert sum(r["attempts"] for r in health) == total
    for row in health:
        assert row["success_rate"] == round(row["succeeded"] / row["attempts"], 4)
