"""Full-text product search with 100,000 products (issue budget: < 50 ms a query), on
SQLite (embedded) and PostgreSQL, beside its peer in the same run: the same words
looked for with `LOWER(…) LIKE '%word%'` over the same documents (name, brand,
category, store name, description of `product_search`): a scan, what a search
without the index does.

Products are recorded through the application (100 catalog results of 1,000
products), names drawn from a vocabulary so that words are common, rare or shared as
prefixes. Each query runs `--rounds` times; p50 and p99 per backend are printed.

    .venv/bin/python bench/search_bench.py [--products 100000] [--no-postgres]
"""

from __future__ import annotations

import argparse
import random
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import psycopg  # noqa: E402

from domain.values import CrawlSuccess, Observation, Offer  # noqa: E402
from ledger.bootstrap import Ledger, bootstrap  # noqa: E402
from ledger.settings import Settings  # noqa: E402
from projections.product_search import PRODUCT_SEARCH  # noqa: E402
from projections.search import SearchQuery  # noqa: E402

T0 = datetime(2026, 1, 1, tzinfo=UTC)
PG = "postgresql://postgres@127.0.0.1:5432/test"
BUDGET = 0.050
STRAINS = ("Blue Dream, Sour Diesel, Girl Scout Cookies, Granddaddy Purple, Northern Lights, "
           "Pineapple Express, Jack Herer, Durban Poison, Gelato, Wedding Cake, Zkittlez, "
           "Gorilla Glue, Bubba Kush, White Widow, Lemon Haze, Purple Punch, Runtz, Mimosa, "
           "Tangie, Blueberry Muffin, OG Kush, Strawberry Cough, Trainwreck, Skywalker, "
           "Maui Wowie, Cherry Pie, Dosidos, Sunset Sherbet, Ice Cream Cake, Apple Fritter")
WORDS = sorted({w for name in STRAINS.split(", ") for w in name.split()})
FORMS = ("Flower", "Pre-roll", "Vape Cartridge", "Gummies", "Chocolate", "Tincture", "Rosin",
         "Live Resin", "Shatter", "Capsules")
BRANDS = ("Jeeter", "Kiva", "Stiiizy", "Raw Garden", "Wyld", "Cookies", "Alien Labs",
          "Connected", "Papa & Barkley", "Crème Farms")
NOTES = ("Sweet berry aroma with a calm finish.", "Citrus and fuel, an energising daytime pick.",
         "Earthy pine notes; slow cured for six weeks.", "Creamy vanilla with a hint of spice.",
         "Grown indoors in living soil, hand trimmed.", None)
QUERIES = ("blue dream", "blue dre", "kush", "gummies", "jeeter", "wedding cake rosin",
           "sour d", "zk", "cookies flower", "granddaddy", "live resin cart", "crème",
           "muffin blueberry", "nothing like this", "og", "ice cream cake gummies", "shop 042 kush",
    "citrus daytime", "vanilla sp")


def catalog(store: int, count: int, rng: random.Random) -> tuple[Observation, ...]:
    strains = STRAINS.split(", ")
    return tuple(
        Observation(f"p{i}", f"{rng.choice(strains)} {rng.choice(WORDS)} {rng.choice(FORMS)}",
                    (Offer("1g", Decimal(rng.randrange(500, 9000)) / 100, "USD"),),
                    "in_stock", brand=rng.choice(BRANDS), category=rng.choice(FORMS),
                    description=rng.choice(NOTES))
        for i in range(count))


def seed(ledger: Ledger, products: int) -> float:
    rng, started = random.Random(7), time.perf_counter()
    per_store = 1000
    for n in range(-(-products // per_store)):
        store = ledger.app.register_store(name=f"Shop {n:03d}", platform="shopify", now=T0,
                                          base_url=f"https://shop-{n:03d}.bench.example")
        job = ledger.app.schedule_job(kind="catalog", now=T0, store_id=store, every=3600,
                                      url=f"https://shop-{n:03d}.bench.example/products.json")
        lease = ledger.app.lease(job, "seed", 300, T0).lease_id
        count = min(per_store, products - n * per_store)
        ledger.app.record_success(job, lease, CrawlSuccess(
            200, "u", "shopify", "1", f"h{n}", observations=catalog(n, count, rng)), T0)
    ledger.catch_up()
    return time.perf_counter() - started


def like_scan(ledger: Ledger) -> Callable[[str], list[Any]]:
    """The peer: every word somewhere in the same five columns, by LIKE."""
    columns = PRODUCT_SEARCH.search

    def search(text: str) -> list[Any]:
        patterns = SearchQuery.parse(text).like_patterns()
        anywhere = " OR ".join(f"LOWER(s.{c}) LIKE ? ESCAPE '\\'" for c in columns)
        where = " AND ".join(f"({anywhere})" for _ in patterns)
        return ledger.db.query(
            f"SELECT p.* FROM product_search s JOIN current_products p ON p.product_id = "
            f"s.product_id WHERE {where} ORDER BY s.name LIMIT 50",
            [p for p in patterns for _ in columns])
    return search


def timed(search: Callable[[str], list[Any]], rounds: int) -> tuple[list[float], int]:
    seconds, found = [], 0
    for _ in range(rounds):
        for text in QUERIES:
            started = time.perf_counter()
            found += len(search(text))
            seconds.append(time.perf_counter() - started)
    return sorted(seconds), found


def pct(values: list[float], p: float) -> float:
    return values[min(len(values) - 1, int(len(values) * p / 100))]


def run(name: str, ledger: Ledger, products: int, rounds: int) -> None:
    took = seed(ledger, products)
    count = len(ledger.db.query("SELECT product_id FROM current_products"))
    print(f"{name}: {count:,} products recorded in {took:.0f} s")
    ours, found = timed(lambda text: ledger.read.search_products(text, limit=50), rounds)
    peer, peer_found = timed(like_scan(ledger), rounds)
    for label, seconds, hits in (("search (index)", ours, found), ("LIKE scan (peer)", peer,
                                                                    peer_found)):
        print(f"  {label:18} p50 {statistics.median(seconds) * 1000:7.1f} ms   "
              f"p99 {pct(seconds, 99) * 1000:7.1f} ms   ({hits // rounds} results a round)")
    verdict = "met" if pct(ours, 99) < BUDGET else "NOT met"
    print(f"  p99 ratio peer/ours: {pct(peer, 99) / pct(ours, 99):.1f}x; budget p99 < "
          f"{BUDGET * 1000:.0f} ms: {verdict}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--products", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--no-postgres", action="store_true")
    args = parser.parse_args()
    data = Path(tempfile.mkdtemp(prefix="crawl-ledger-searchbench-"))
    try:
        ledger = bootstrap(Settings.from_env({"LEDGER_DATA_DIR": str(data / "sqlite")}))
        try:
            run("SQLite (embedded)", ledger, args.products, args.rounds)
        finally:
            ledger.close()
        if args.no_postgres:
            return
        schema = f"searchbench_{uuid.uuid4().hex[:8]}"
        ledger = bootstrap(Settings.from_env({"LEDGER_DATA_DIR": str(data / "pg"),
                                              "LEDGER_STORE": f"{PG}?schema={schema}"}))
        try:
            run("PostgreSQL", ledger, args.products, args.rounds)
        finally:
            ledger.close()
            with psycopg.connect(PG, autocommit=True) as conn:
                for name in (schema, f"{schema}_read"):
                    conn.execute(f"DROP SCHEMA IF EXISTS {name} CASCADE")
    finally:
        shutil.rmtree(data, ignore_errors=True)


if __name__ == "__main__":
    main()
