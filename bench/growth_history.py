"""A fleet's crawl history, recorded through the ledger in big groups (not a test).

Every event is made by the domain's own aggregates and stored by the ledger's own
mapper, transcoder and recorder (PostgreSQL: binary COPY), so the stored bytes are
the bytes real crawls store; speed comes from `record_many` (up to `group` results
a transaction) instead of one transaction a result.

The fleet: `stores` stores of `products` products each (prices 5.00-104.99, two
offers, THC/strain attributes), every store a catalog job crawled `crawls_per_day`
times a day. At each crawl a product's price changes with `price_change_rate`, a
listed product drops out of the listing with `delist_rate` (it comes back with
`relist_rate` a crawl: absences are Missed, and three make it WentOutOfStock),
the store starts saying "out of stock" with `sold_out_rate` (back with
`restock_rate`), and the crawl fails with `failure_rate` (three failures in a row
make its products' stock unknown). Most observations therefore change nothing,
as in a real fleet. The same seed gives the same history.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from decimal import Decimal

from domain import ids
from domain.recording import Recording
from domain.urls import normalize_url
from domain.values import CrawlFailure, CrawlSuccess, Observation, Offer
from ledger.bootstrap import Ledger

__all__ = ["T0", "FleetShape", "History", "StoreCatalog", "crawl_more", "record_history",
           "resume_history"]

T0 = datetime(2026, 1, 1, tzinfo=UTC)
STRAINS = ("Indica", "Sativa", "Hybrid")
CATEGORIES = ("flower", "edibles", "vapes", "pre-rolls", "concentrates")


@dataclass(frozen=True)
class FleetShape:
    """How big the fleet is and how its catalogs move between crawls."""

    stores: int
    products: int = 500
    crawls_per_day: int = 6
    failure_rate: float = 0.04
    price_change_rate: float = 0.01
    delist_rate: float = 0.002
    relist_rate: float = 0.3
    sold_out_rate: float = 0.003
    restock_rate: float = 0.2

    @property
    def interval(self) -> timedelta:
        return timedelta(seconds=86_400 // self.crawls_per_day)


def store_url(n: int) -> str:
    return f"https://shop-{n:04d}.growth.example"


@dataclass
class StoreCatalog:
    """One store's products as its catalog shows them, moved on crawl by crawl."""

    number: int
    shape: FleetShape
    rng: random.Random
    cents: list[int] = field(default_factory=list)
    listed: list[bool] = field(default_factory=list)
    sold_out: list[bool] = field(default_factory=list)
    #: the products whose price, listing or stock the last move changed
    moved: set[int] = field(default_factory=set)
    #: each product's observation as of the last `crawl_listed` (rebuilt when it moves)
    shown: list[Observation | None] = field(default_factory=list)

    def __post_init__(self) -> None:
        count = self.shape.products
        self.cents = [500 + self.rng.randrange(10_000) for _ in range(count)]
        self.listed = [True] * count
        self.sold_out = [False] * count
        self.shown = [None] * count

    def crawl(self) -> tuple[Observation, ...]:
        """The next crawl's observations (the catalog moves first)."""
        self._move()
        return tuple(self._observation(i) for i in range(self.shape.products) if self.listed[i])

    def crawl_listed(self) -> list[tuple[int, Observation]]:
        """`crawl` (the same moves, the same random draws) as (product number,
        observation) pairs, the observations of products that did not move reused."""
        self._move()
        shown = self.shown
        for i in self.moved:
            shown[i] = None
        listed = []
        for i, on in enumerate(self.listed):
            if on:
                obs = shown[i]
                if obs is None:
                    obs = shown[i] = self._observation(i)
                listed.append((i, obs))
        return listed

    def _move(self) -> None:
        s, rng = self.shape, self.rng
        moved = self.moved = set()
        for i in range(s.products):
            if rng.random() < s.price_change_rate:
                self.cents[i] = max(100, self.cents[i] + rng.choice((-500, -200, -100, 100, 200)))
                moved.add(i)
            if self.listed[i]:
                self.listed[i] = rng.random() >= s.delist_rate
            else:
                self.listed[i] = rng.random() < s.relist_rate
            if not self.listed[i]:
                moved.add(i)
            flip = s.restock_rate if self.sold_out[i] else s.sold_out_rate
            if rng.random() < flip:
                self.sold_out[i] = not self.sold_out[i]
                moved.add(i)

    def _observation(self, i: int) -> Observation:
        n, base = self.number, self.cents[i]
        return Observation(
            provider_product_id=f"p{i}", name=f"Product {n}-{i}", brand=f"Brand {i % 37}",
            category=CATEGORIES[i % len(CATEGORIES)],
            url=f"{store_url(n)}/products/p{i}",
            image_url=f"{store_url(n)}/images/p{i}.jpg",
            offers=(Offer("1g", Decimal(base) / 100, "USD"),
                    Offer("3.5g", Decimal(base * 3) / 100, "USD")),
            availability="out_of_stock" if self.sold_out[i] else "in_stock",
            attributes={"thc": f"{15 + i % 15}.{i % 10}%", "strain_type": STRAINS[i % 3]})


@dataclass
class History:
    """What `record_history` recorded."""

    stores: list[str]
    jobs: list[str]
    events: int
    crawls: int
    seconds: float
    last: datetime
    catalogs: list[StoreCatalog]

    @property
    def rate(self) -> float:
        return self.events / self.seconds


def record_history(ledger: Ledger, target_events: int, shape: FleetShape, seed: int = 0,
                   group: int = 20, progress: Callable[[int], None] | None = None) -> History:
    """Crawl the fleet round after round until the log holds `target_events` events."""
    rng, app = random.Random(seed), ledger.app
    started = time.perf_counter()
    stores, jobs = [], []
    for n in range(shape.stores):
        store = str(app.register_store(name=f"Shop {n:04d}", base_url=store_url(n),
                                       platform="shopify", now=T0))
        stores.append(store)
        jobs.append(str(app.schedule_job(kind="catalog", url=f"{store_url(n)}/products.json",
                                         now=T0, store_id=store,
                                         every=int(shape.interval.total_seconds()),
                                         adaptive=False)))
    catalogs = [StoreCatalog(n, shape, random.Random(rng.random())) for n in range(shape.stores)]
    events, crawls, now = app.recorder.max_notification_id() or 0, 0, T0
    cycle = 0
    while events < target_events:
        for first in range(0, len(jobs), group):
            items = []
            for n in range(first, min(first + group, len(jobs))):
                now = T0 + cycle * shape.interval + timedelta(seconds=n)
                items.append(_crawl(ledger, jobs[n], catalogs[n], rng, shape, now))
            for answer in app.record_many(items):
                if isinstance(answer, Exception):
                    raise answer
            crawls += len(items)
            events = app.recorder.max_notification_id() or 0
            if events >= target_events:
                break
            if progress:
                progress(events)
        cycle += 1
    return History(stores, jobs, events, crawls, time.perf_counter() - started, now, catalogs)


def _crawl(ledger: Ledger, job: str, catalog: StoreCatalog, rng: random.Random,
           shape: FleetShape, now: datetime) -> Recording:
    lease = ledger.app.lease(job, "growth", 600, now).lease_id
    if rng.random() < shape.failure_rate:
        kind = rng.choice(("timeout", "http_5xx", "http_429"))
        return Recording(job, lease, CrawlFailure(kind, f"{kind} from the store", True), now)
    observations = catalog.crawl()
    url = f"{store_url(catalog.number)}/products.json"
    outcome = CrawlSuccess(200, url, "shopify", "shopify/1",
                           f"{catalog.number}-{now.timestamp():.0f}", observations=observations)
    return Recording(job, lease, outcome, now)


def resume_history(ledger: Ledger, shape: FleetShape, seed: int = 0) -> History:
    """The `History` of a store `record_history` filled earlier (a kept schema): its
    stores and jobs (their ids follow from the fleet), the time of its last round, and
    catalogs as they start (their next crawls are realistic, not the recorded ones')."""
    stores = [str(ids.store_id(store_url(n))) for n in range(shape.stores)]
    jobs = [str(ids.job_id("catalog", normalize_url(f"{store_url(n)}/products.json")))
            for n in range(shape.stores)]
    runs = [ledger.app.get_job(job).next_run_at for job in (jobs[0], jobs[-1])]
    last = max(r for r in runs if r is not None) - shape.interval
    rng = random.Random(seed)
    catalogs = [StoreCatalog(n, shape, random.Random(rng.random())) for n in range(shape.stores)]
    events = ledger.app.recorder.max_notification_id() or 0
    return History(stores, jobs, events, 0, 1.0, last, catalogs)


def crawl_more(ledger: Ledger, history: History, events: int, seed: int = 1,
               group: int = 20) -> int:
    """Crawl the fleet's next rounds, store by store, until `events` more are recorded
    (history's `last` moves on); returns how many were."""
    rng, app, shape = random.Random(seed), ledger.app, history.catalogs[0].shape
    start = app.recorder.max_notification_id() or 0
    cycle = (history.last - T0) // shape.interval + 1
    while True:
        for first in range(0, len(history.jobs), group):
            items = []
            for n in range(first, min(first + group, len(history.jobs))):
                now = T0 + cycle * shape.interval + timedelta(seconds=n)
                items.append(_crawl(ledger, history.jobs[n], history.catalogs[n], rng, shape,
                                    now))
            for answer in app.record_many(items):
                if isinstance(answer, Exception):
                    raise answer
            history.last = now
            added = (app.recorder.max_notification_id() or 0) - start
            if added >= events:
                return added
        cycle += 1
