"""The growth fleet's history, generated fast: the domain's aggregates in memory, the
events written in big `COPY`s (not a test).

`growth_history.record_history` records every crawl through `record_many`: each
group loads its jobs and products from the store and runs every observation through
`Product.observe`, ~65 ms of CPU a 500-product crawl, so 10⁷ events took hours.
`generate_history` writes the same history (the same fleet, catalog moves and random
draws, so the same events) at a small part of that cost:

- every job and product stays in memory as the domain's own aggregate (`CrawlJob`,
  `Product`), so nothing is loaded back from the store;
- a product that its last crawl saw unchanged, and whose catalog entry did not move
  since (`StoreCatalog.crawl_listed`), is sighted again unchanged without calling
  `observe` (it would change nothing and return the same offers): its `Sightings`
  row is reused. Every other product goes through the domain's commands
  (`Discovered`, `observe`, `miss`, `lose_sight`) exactly as `record_many` does;
- each crawl's aggregates are the ones `_prepare_success` / `_prepare_failure` save
  (the job, the changed products, the crawl's `Sightings`), in that order, and the
  crawls of a round are saved by the application's own `_save_aggregates` (its mapper
  and transcoder, its snapshots, the recorder's binary `COPY` with each event's
  audit-chain link from `eventstore.chain`), up to `batch` crawls a transaction, each
  aggregate at most once a save.

What differs from recording each result: the lease ids (drawn from the seed, not
`uuid4`), the transactions (bigger), and the order of a crawl's missed products in
the log (`record_many` takes them from a set). `tests/unit/test_growth_fast.py`
compares the two generators' events stream by stream.
"""

from __future__ import annotations

import random
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, cast

from growth_history import T0, FleetShape, History, StoreCatalog, store_url

from domain import ids
from domain.chaining import Aggregates, Chain
from domain.crawl_job import CrawlJob
from domain.outcome import outcome_payload
from domain.product import FAILURES_FOR_UNKNOWN_STOCK, Product
from domain.sightings import OFFER_FIELDS, SightingColumns, _cell
from domain.timeutil import command_time
from domain.values import CrawlSuccess, Observation
from ledger.bootstrap import Ledger

__all__ = ["generate_history"]

#: a product's row of its crawl's `Sightings`: its offers' cells, availability,
#: quantity and attributes (its version is read from the product)
Row = tuple[list[list[Any]], str, "int | None", dict[str, Any]]


@dataclass
class _Store:
    """One store's job and products, in memory, and what its last crawl left clean."""

    number: int
    store_id: str
    job: CrawlJob
    catalog: StoreCatalog
    url: str
    products: dict[int, Product] = field(default_factory=dict)
    #: the products whose last event-free sighting can be repeated, with its row
    clean: dict[int, Row] = field(default_factory=dict)
    keys: dict[int, str] = field(default_factory=dict)


def generate_history(ledger: Ledger, target_events: int, shape: FleetShape, seed: int = 0,
                     batch: int = 200, progress: Callable[[int], None] | None = None
                     ) -> History:
    """`record_history`'s fleet and crawls, written fast, until the log holds
    `target_events` events (see the module's docstring)."""
    rng, app = random.Random(seed), ledger.app
    started = time.perf_counter()
    stores: list[_Store] = []
    for n in range(shape.stores):
        store_id = str(app.register_store(name=f"Shop {n:04d}", base_url=store_url(n),
                                          platform="shopify", now=T0))
        job = app.schedule_job(kind="catalog", url=f"{store_url(n)}/products.json", now=T0,
                               store_id=store_id, every=int(shape.interval.total_seconds()),
                               adaptive=False)
        stores.append(_Store(n, store_id, app.get_job(job), StoreCatalog(
            n, shape, random.Random(rng.random())), f"{store_url(n)}/products.json"))
    leases = random.Random(seed + 1)
    events, crawls, now, cycle = app.recorder.max_notification_id() or 0, 0, T0, 0
    per_save = max(1, min(batch, len(stores)))  # a job at most once a save
    while events < target_events:
        for first in range(0, len(stores), per_save):
            aggregates: list[Any] = []
            for store in stores[first:first + per_save]:
                now = T0 + cycle * shape.interval + timedelta(seconds=store.number)
                lease = uuid.UUID(int=leases.getrandbits(128), version=4).hex
                with command_time(now):
                    aggregates += _crawl(ledger, store, lease, rng, shape, now)
            crawls += min(per_save, len(stores) - first)
            app._save_aggregates(aggregates)  # noqa: SLF001 - the application's own save
            events = app.recorder.max_notification_id() or 0
            if progress:
                progress(events)
            if events >= target_events:
                break
        cycle += 1
    history = History([s.store_id for s in stores], [str(s.job.id) for s in stores], events,
                      crawls, time.perf_counter() - started, now, [s.catalog for s in stores])
    return history


def _crawl(ledger: Ledger, store: _Store, lease: str, rng: random.Random, shape: FleetShape,
           now: datetime) -> list[Any]:
    """One crawl of the store's catalog: the aggregates its result saves, in order."""
    job = store.job
    job.lease("growth", lease, 600, now)
    if rng.random() < shape.failure_rate:
        kind = rng.choice(("timeout", "http_5xx", "http_429"))
        job.fail(lease, kind, f"{kind} from the store", True, None, now, None)
        return [job, *_stock_unseen(store, now)]
    listed = store.catalog.crawl_listed()
    outcome = CrawlSuccess(200, store.url, "shopify", "shopify/1",
                           f"{store.number}-{now.timestamp():.0f}",
                           observations=tuple(obs for _, obs in listed))
    changed, new_ids, sightings = _product_events(store, listed, lease, outcome, now)
    chain = Chain(cast(Aggregates, ledger.app), job, now, ledger.app.options.catalog_interval,
                  ledger.app.options.max_new_jobs)
    chain.follow(outcome)
    job.succeed(lease, outcome_payload(outcome, chain.dropped, chain.unmatched), new_ids, now,
                None)
    return [job, *changed, *([sightings] if sightings is not None else []),
            *chain.aggregates()]


def _stock_unseen(store: _Store, now: datetime) -> list[Product]:
    """`ResultRecording._stock_unseen`: the third failure in a row makes the job's
    products' stock unknown."""
    job = store.job
    if not job.products or job.consecutive_failures != FAILURES_FOR_UNKNOWN_STOCK:
        return []
    listed = set(job.products)
    touched = []
    for i, product in store.products.items():
        if store.keys[i] in listed:
            product.lose_sight(str(job.id), job.consecutive_failures, job.last_error, now)
            store.clean.pop(i, None)
            if product.pending_events:
                touched.append(product)
    return touched


def _product_events(store: _Store, listed: list[tuple[int, Observation]], lease: str,
                    outcome: CrawlSuccess, now: datetime
                    ) -> tuple[list[Product], list[str], Any]:
    """`ResultRecording._product_events` for a catalog job with compact sightings: the
    products the crawl changes, the new product ids, and its `Sightings` (or None)."""
    job, job_ref = store.job, str(store.job.id)
    moved = store.catalog.moved
    columns = SightingColumns()
    changed: list[Product] = []
    seen: set[str] = set()
    for i, obs in listed:
        key = store.keys.get(i)
        if key is None:
            key = store.keys[i] = str(ids.product_id(store.store_id, obs.provider_product_id))
        seen.add(key)
        product = store.products.get(i)
        if product is None:
            product = store.products[i] = Product.discover(store.store_id, obs, job_ref, now)
        row = store.clean.get(i)
        if row is None or i in moved:
            offers = product.observe(obs, job_ref, job.attempt, outcome.content_hash,
                                     outcome.extractor_version, now, True)
            if offers is None:
                store.clean.pop(i, None)
                changed.append(product)
                continue
            row = store.clean[i] = ([[_cell(o[f]) for f in OFFER_FIELDS] for o in offers],
                                    obs.availability, obs.quantity, dict(obs.attributes))
        columns.products.append(key)
        columns.versions.append(product.version)
        columns.offers.append(row[0])
        columns.availability.append(row[1])
        columns.quantity.append(row[2])
        columns.attributes.append(row[3])
    known = set(job.products)
    for i, product in store.products.items():
        key = store.keys[i]
        if key in known and key not in seen:
            product.miss(job_ref, now)
            store.clean.pop(i, None)
            if product.pending_events:
                changed.append(product)
    new_ids = sorted(seen.difference(known))
    sightings = columns.record(job_ref, lease, job.attempt, now, outcome.content_hash,
                               outcome.extractor_version)
    return changed, new_ids, sightings
