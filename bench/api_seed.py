"""Seeding and serving for the API and dashboard benchmarks (`bench/api_bench.py`,
`bench/dashboard_bench.py`): a fresh embedded ledger filled through the application as
crawls would record it, and `crawl-ledger serve` on a free loopback port."""

from __future__ import annotations

import os
import random
import socket
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import httpx  # noqa: E402

from domain.urls import normalize_url  # noqa: E402
from domain.values import CrawlFailure, CrawlSuccess, Observation, Offer  # noqa: E402
from ledger.bootstrap import Ledger, bootstrap  # noqa: E402
from ledger.settings import Settings  # noqa: E402

__all__ = ["STORES", "T0", "catalog", "free_port", "open_ledger", "seed", "serve",
           "store_url"]

STORES = 100
FEED_LINKS = 1000  # a feed result chains at most DEFAULT_MAX_NEW_JOBS (1,000) jobs
T0 = datetime(2026, 3, 1, 8, 0, tzinfo=UTC)
BIN = Path(sys.executable).with_name("crawl-ledger")


def open_ledger(data: Path) -> Ledger:
    return bootstrap(Settings.from_env({"LEDGER_DATA_DIR": str(data)}))


def store_url(n: int) -> str:
    return f"https://shop-{n:03d}.bench.example"


def catalog(store: int, count: int, day: int = 0) -> tuple[Observation, ...]:
    """`count` products of one store: prices 5.00-104.99, one in 40 out of stock; a later
    `day` moves one price in 5 and turns another one in 40 out of stock."""
    return tuple(
        Observation(provider_product_id=f"p{i}", name=f"Product {store}-{i}", brand="Brand",
                    category=("flower", "edibles", "vapes")[i % 3],
                    url=f"{store_url(store)}/products/p{i}",
                    offers=(Offer("1g", Decimal(500 + (i * 37 + store + day * 1013 * (i % 5 == 0))
                                                % 10_000) / 100, "USD"),),
                    availability="out_of_stock" if (i + store + day) % 40 == 0 else "in_stock")
        for i in range(count))


def seed(ledger: Ledger, products: int, jobs: int) -> dict[str, Any]:
    app = ledger.app
    started = time.perf_counter()
    stores = [str(app.register_store(name=f"Shop {n:03d}", base_url=store_url(n),
                                     platform="shopify", now=T0)) for n in range(STORES)]
    per_store = -(-products // STORES)
    for n, store in enumerate(stores):
        count = min(per_store, products - n * per_store)
        if count <= 0:
            break
        job = app.schedule_job(kind="catalog", url=f"{store_url(n)}/products.json", now=T0,
                               store_id=store, every=3600)
        task = app.lease(job, "seed", 300, T0)
        app.record_success(job, task.lease_id,
                           CrawlSuccess(200, task.url, "shopify", "shopify/1", f"h{n}",
                                        observations=catalog(n, count)), T0)
    recorded = time.perf_counter() - started
    # feeds chain product-page jobs (one save of up to 1,000 new jobs per result)
    remaining, n = jobs - STORES, 0
    while remaining > 0:
        links = min(FEED_LINKS, remaining - 1)
        feed = app.schedule_job(kind="feed", url=f"{store_url(n)}/sitemap.xml", now=T0,
                                store_id=stores[n], every=86400)
        task = app.lease(feed, "seed", 300, T0)
        urls = tuple(normalize_url(f"{store_url(n)}/products/p{i}") for i in range(links))
        app.record_success(feed, task.lease_id,
                           CrawlSuccess(200, task.url, "sitemap", "sitemap/1", f"f{n}",
                                        links=urls), T0)
        remaining -= links + 1
        n += 1
    ledger.catch_up()
    pages = [r["job_id"] for r in ledger.read.jobs() if r["kind"] == "product_page"]
    rng = random.Random(13)
    rng.shuffle(pages)
    # some jobs in other states, so the state filters have something to select
    for job in pages[:500]:
        app.pause(job, T0)
    later = T0 + timedelta(minutes=1)
    for job in pages[500:800]:
        task = app.lease(job, "seed", 300, later)
        app.record_failure(job, task.lease_id, CrawlFailure("http_5xx", "502", retryable=True),
                           later)
    for job in pages[800:900]:
        app.lease(job, "seed", 3600, later)
    recrawl(ledger, stores, per_store, T0 + timedelta(days=1))
    ledger.catch_up()
    return {"stores": stores, "seconds": time.perf_counter() - started, "recorded": recorded,
            "events": ledger.source.head(), "jobs": len(ledger.read.jobs()),
            "products": len(ledger.read.products()), "paused_job": pages[0]}


def recrawl(ledger: Ledger, stores: list[str], per_store: int, at: datetime) -> None:
    """Crawl the first tenth of the stores' catalogs again a day later: price changes and
    stock changes for the changes page (`/changes`)."""
    app = ledger.app
    catalogs = [r for r in ledger.read.jobs() if r["kind"] == "catalog"]
    for row in catalogs[:max(1, len(stores) // 10)]:
        n = stores.index(row["store_id"])
        task = app.lease(row["job_id"], "seed", 300, at)
        app.record_success(row["job_id"], task.lease_id,
                           CrawlSuccess(200, task.url, "shopify", "shopify/1", f"h{n}d1",
                                        observations=catalog(n, per_store, day=1)), at)


# the server --------------------------------------------------------------------------
def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def serve(data: Path) -> tuple[subprocess.Popen[str], str]:
    port = free_port()
    env = dict(os.environ, LEDGER_DATA_DIR=str(data))
    server = subprocess.Popen([str(BIN), "serve", "--port", str(port)], env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            if httpx.get(f"{url}/healthz").status_code == 200:
                return server, url
        except httpx.TransportError:
            pass
        if server.poll() is not None or time.monotonic() > deadline:
            raise SystemExit(f"the API did not start: {server.communicate()[1]}")
        time.sleep(0.1)
