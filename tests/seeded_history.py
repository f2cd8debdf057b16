"""A seeded ledger history with price changes, stock changes and failures, on any backend.

Two stores, a catalog job each; every hour each job is leased and records either a
failure or a crawl of a random subset of its products at random prices (so products
go out of stock after missed crawls, come back, and change price). The same seed
gives the same history; `T0` and the returned times bound it.
"""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from decimal import Decimal

from domain import ids
from domain.urls import normalize_url
from domain.values import CrawlFailure, CrawlSuccess, Observation, Offer
from ledger.bootstrap import Ledger

T0 = datetime(2026, 3, 1, 8, 0, tzinfo=UTC)
PRODUCTS = 6


def record_seeded_history(ledger: Ledger, cycles: int = 12, seed: int = 0,
                          first_cycle: int = 0) -> datetime:
    """Record the history; returns the time of its last event. With `first_cycle`, the
    stores and jobs exist (recorded by an earlier call) and the crawls go on from that
    cycle."""
    rng = random.Random(seed)
    app = ledger.app
    jobs = []
    for shop in ("alpha", "beta"):
        url = f"https://{shop}.example/p.json"
        if first_cycle:
            jobs.append((shop, ids.job_id("catalog", normalize_url(url))))
            continue
        store = app.register_store(name=shop.title(), base_url=f"https://{shop}.example",
                                   platform="shopify", now=T0)
        jobs.append((shop, app.schedule_job(kind="catalog", url=url,
                                            now=T0, store_id=store, every=3600, adaptive=False)))
    now = T0
    for cycle in range(first_cycle, first_cycle + cycles):
        for index, (shop, job) in enumerate(jobs):
            now = T0 + timedelta(hours=cycle, minutes=7 * index)
            lease = app.lease(job, "w1", 300, now).lease_id
            if rng.random() < 0.15:
                app.record_failure(job, lease, CrawlFailure("timeout", "no answer", True), now)
                continue
            app.record_success(job, lease, _crawl(rng, shop, cycle), now)
    return now


def _crawl(rng: random.Random, shop: str, cycle: int) -> CrawlSuccess:
    listed = [i for i in range(PRODUCTS) if rng.random() < 0.7]
    observations = tuple(
        Observation(f"{shop}-{i}", f"Product {i}", (
            Offer("1g", Decimal(10 + i + rng.choice((0, 0, 1, 2))) + Decimal("0.50"), "USD"),
            Offer("3.5g", Decimal(30 + rng.randrange(3)), "USD",
                  special_price=Decimal(25) if rng.random() < 0.3 else None)),
            rng.choice(("in_stock", "in_stock", "in_stock", "out_of_stock")),
            brand="Brand", category="flower")
        for i in listed)
    return CrawlSuccess(200, f"https://{shop}.example/p.json", "test", "1", f"{shop}{cycle}",
                        observations=observations)


def record_prices(ledger: Ledger, prices: list[str]) -> None:
    """A store, a catalog job and one crawl of product p1 at each price, an hour apart
    from 2026-03-01."""
    T0 = datetime(2026, 3, 1, tzinfo=UTC)  # noqa: N806 - the tests' own start
    app = ledger.app
    store = app.register_store(name="Shop", base_url="https://shop.example", platform="shopify",
                               now=T0)
    job = app.schedule_job(kind="catalog", url="https://shop.example/products.json", now=T0,
                           store_id=store, every=3600, adaptive=False)
    for n, price in enumerate(prices):
        now = T0 + timedelta(hours=n)
        lease = app.lease(job, "w1", 300, now).lease_id
        obs = Observation("p1", "Mug", offers=(Offer("default", Decimal(price), "USD"),))
        app.record_success(job, lease, CrawlSuccess(200, "https://shop.example/products.json",
                                                    "shopify", "1", f"h{n}", observations=(obs,)),
                           now)
