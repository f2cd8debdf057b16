"""Compact sightings (`domain.sightings`) answer every question per-product `Observed`
events answered.

The same crawls (two stores; two catalog jobs seeing some of the same products; a
product-page job, whose page finally answers 410; price, availability, quantity and
name changes; products missing from listings and out of stock; three failures in a
row) are recorded into three ledgers: every observation per product (the old way),
unchanged observations in one `Sightings` event a crawl (the new way), and the old
way for the first half then the new way (a store holding both). All three must give
equal read models (but for the stream versions, which count fewer product events),
equal `products show --as-of` states at every crawl's time and between, and equal
DuckDB price histories and `product_as_of` rows (but for the lineage's event ids and
positions).
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest
from backends import BACKENDS, open_ledger, store_url

from analytics.queries import price_history
from analytics.sandbox import run_query, sandboxed
from analytics.views import connect
from domain.errors import NotFound
from domain.values import CrawlFailure, CrawlSuccess, Observation, Offer
from ledger.bootstrap import Ledger
from projections.datasets import DatasetWriter
from projections.framework import table_rows
from projections.products import CURRENT_PRODUCTS
from runtime.as_of import product_as_of

T0 = datetime(2026, 4, 1, 6, 0, tzinfo=UTC)
CYCLES = 18
#: per product: [price, special, availability, quantity, name, listed]
Catalog = dict[str, list[Any]]


def record_crawls(ledger: Ledger, compact_from: int | None, seed: int = 7) -> list[datetime]:
    """The crawls (the same for a seed); per product events only from cycle
    `compact_from` on (None: never). Returns the crawl times."""
    rng = random.Random(seed)
    app = ledger.app
    app.options = replace(app.options, compact_sightings=compact_from == 0)
    catalogs: dict[str, Catalog] = {}
    stores: dict[str, str] = {}
    jobs: list[tuple[str, str, list[str]]] = []
    for shop in ("alpha", "beta"):
        store = stores[shop] = app.register_store(name=shop.title(), base_url=f"https://{shop}.example",
                                   platform="shopify", now=T0)
        catalogs[shop] = {f"{shop}-{i}": [Decimal(10 + i) + Decimal("0.50"), None, "in_stock",
                                          5 + i, f"Product {i}", True] for i in range(10)}
        every = list(catalogs[shop])
        jobs.append((shop, app.schedule_job(kind="catalog", url=f"https://{shop}.example/p.json",
                                            now=T0, store_id=store, every=3600, adaptive=False),
                     every))
    alpha = stores["alpha"]
    jobs.append(("alpha", app.schedule_job(kind="catalog", url="https://alpha.example/deals.json",
                                           now=T0, store_id=alpha, every=3600, adaptive=False),
                 ["alpha-0", "alpha-1", "alpha-2"]))
    page = app.schedule_job(kind="product_page", url="https://alpha.example/p/alpha-5", now=T0,
                            store_id=alpha, every=3600, adaptive=False)
    times = []
    for cycle in range(CYCLES):
        if compact_from is not None and cycle == compact_from:
            app.options = replace(app.options, compact_sightings=True)
        for catalog in catalogs.values():
            _move(rng, catalog)
        for index, (shop, job, listed) in enumerate(jobs):
            now = T0 + timedelta(hours=cycle, minutes=5 * index)
            times.append(now)
            lease = app.lease(job, "w1", 300, now).lease_id
            if shop == "beta" and cycle in (6, 7, 8) or rng.random() < 0.04:
                app.record_failure(job, lease, CrawlFailure("timeout", "no answer", True), now)
                continue
            seen = tuple(_observation(pid, catalogs[shop][pid]) for pid in listed
                         if catalogs[shop][pid][5])
            app.record_success(job, lease, CrawlSuccess(200, "https://x.example/", "test", "1",
                                                        f"{shop}{cycle}", observations=seen), now)
        now = T0 + timedelta(hours=cycle, minutes=30)
        times.append(now)
        lease = app.lease(page, "w1", 300, now).lease_id
        gone = cycle == CYCLES - 2
        result = CrawlSuccess(410 if gone else 200, "https://alpha.example/p/alpha-5", "test", "1",
                              f"p{cycle}", gone=gone,
                              observations=() if gone else (
                                  _observation("alpha-5", catalogs["alpha"]["alpha-5"]),))
        app.record_success(page, lease, result, now)
    return times


def _move(rng: random.Random, catalog: Catalog) -> None:
    """What changes between two crawls: mostly nothing."""
    for values in catalog.values():
        roll = rng.random()
        if roll < 0.03:
            values[0] += Decimal(rng.choice((-2, -1, 1, 3)))
        elif roll < 0.045:
            values[1] = None if values[1] is not None else values[0] - 1
        elif roll < 0.065:
            values[2] = "out_of_stock" if values[2] == "in_stock" else "in_stock"
        elif roll < 0.08:
            values[3] = rng.randrange(0, 9)
        elif roll < 0.09:
            values[4] = values[4] + " (new)"
        elif roll < 0.16:
            values[5] = not values[5]


def _observation(pid: str, values: list[Any]) -> Observation:
    price, special, availability, quantity, name, _ = values
    return Observation(pid, name, (Offer("1g", price, "USD", special_price=special),
                                   Offer("3.5g", price * 3, "USD")),
                       availability, brand="Brand", category="flower", quantity=quantity,
                       attributes={"thc": "20%"})


@pytest.fixture(params=BACKENDS, scope="module")
def three(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
          ) -> Iterator[dict[str, Any]]:
    """The same crawls recorded three ways: {"old"|"new"|"mixed": (ledger, crawl times)}."""
    tmp_path = tmp_path_factory.mktemp(request.param)
    found: dict[str, Any] = {}
    with (store_url(request.param, tmp_path / "o") as old_url,
          store_url(request.param, tmp_path / "n") as new_url,
          store_url(request.param, tmp_path / "m") as mixed_url,
          open_ledger(old_url, tmp_path / "o") as old, open_ledger(new_url, tmp_path / "n") as new,
          open_ledger(mixed_url, tmp_path / "m") as mixed):
        for name, ledger, compact_from in (("old", old, None), ("new", new, 0),
                                           ("mixed", mixed, CYCLES // 2)):
            found[name] = (ledger, record_crawls(ledger, compact_from))
            ledger.catch_up()
        yield found


def _without(rows: list[dict[str, Any]], *columns: str) -> list[dict[str, Any]]:
    return sorted(({k: v for k, v in r.items() if k not in columns} for r in rows), key=repr)


def read_models(ledger: Ledger) -> dict[str, list[dict[str, Any]]]:
    """Every read-model table, stream versions left out (the only thing that differs)."""
    return {t.name: _without(table_rows(ledger.db, t, ""), "version", "last_position")
            for p in ledger.projections() for t in p.tables}


def test_the_new_way_stores_fewer_events_and_a_sightings_event_a_crawl(three: dict[str, Any]
                                                                        ) -> None:
    kinds = {name: Counter(e.event_type for e in ledger.source.read(0, 100_000))
             for name, (ledger, _) in three.items()}
    assert kinds["old"]["Sightings.Recorded"] == 0
    assert kinds["new"]["Sightings.Recorded"] > 20
    assert kinds["new"]["Product.Observed"] < kinds["old"]["Product.Observed"] * 0.7
    assert 0 < kinds["mixed"]["Sightings.Recorded"] < kinds["new"]["Sightings.Recorded"]
    # the history has every kind of change the rules must get right
    for kind in ("PriceChanged", "DetailsChanged", "Missed", "WentOutOfStock", "BackInStock",
                 "StockUnknown", "StockKnown"):
        assert kinds["new"][f"Product.{kind}"] > 0, kind
    for name in ("new", "mixed"):
        assert {k: n for k, n in kinds[name].items() if k not in (
            "Product.Observed", "Sightings.Recorded")} == {
            k: n for k, n in kinds["old"].items() if k != "Product.Observed"}, name


def test_read_models_are_equal(three: dict[str, Any]) -> None:
    old = read_models(three["old"][0])
    assert old["current_products"] and old["stock_status"]
    for name in ("new", "mixed"):
        models = read_models(three[name][0])
        for table, rows in old.items():
            assert models[table] == rows, (name, table)


def test_as_of_answers_are_equal_at_every_crawl_and_between(three: dict[str, Any]) -> None:
    old, times = three["old"]
    products = [r["product_id"] for r in table_rows(old.db, CURRENT_PRODUCTS, "")]
    moments = sorted({*times, *(t + timedelta(minutes=2) for t in times),
                      times[0] - timedelta(minutes=1), times[-1] + timedelta(days=1)})
    compared = Counter[str]()
    for product_id in products:
        for at in moments[int(product_id[:4], 16) % 6::6]:
            want = _state(old, product_id, at)
            for name in ("new", "mixed"):
                assert _state(three[name][0], product_id, at) == want, (name, product_id, at)
            compared["states" if want else "not yet"] += 1
    assert compared["states"] > 120 and compared["not yet"] > 0, compared


def _state(ledger: Ledger, product_id: str, at: datetime) -> dict[str, Any] | None:
    try:
        return product_as_of(ledger, ledger.app.get_product(product_id), at)["state"]
    except NotFound:
        return None


def test_duckdb_price_history_and_as_of_are_equal(three: dict[str, Any]) -> None:
    answers = {}
    for name, (ledger, times) in three.items():
        DatasetWriter(ledger.data_dir, ledger.source, ledger.tables.dataset_manifests).catch_up()
        con = connect(ledger.data_dir / "datasets")
        ids = sorted(r[0] for r in con.execute(
            "SELECT DISTINCT product_id FROM price_observations").fetchall())
        history = {p: _without(price_history(con, p).to_pylist(), "event_id", "position")
                   for p in ids}
        box = sandboxed(ledger.data_dir / "datasets")
        as_of = {t: _without(run_query(box, f"SELECT * FROM product_as_of('{t.isoformat()}')")
                             .to_pylist(), "event_id", "position")
                 for t in times[::7]}
        answers[name] = (history, as_of)
    old_history, old_as_of = answers["old"]
    assert len(old_history) == 20 and sum(map(len, old_history.values())) > 500
    for name in ("new", "mixed"):
        history, as_of = answers[name]
        assert history == old_history, name
        assert as_of == old_as_of, name
