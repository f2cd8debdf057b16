"""Replaying stored events reproduces an aggregate exactly — now, and as of any version —
from a fresh application over the same database (both backends)."""

from __future__ import annotations

import copy
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import backends
from eventsourcing.domain import Aggregate

from domain.crawl_job import CrawlJob
from domain.product import Product
from domain.values import Observation, Offer
from ledger.bootstrap import Ledger

T0 = datetime(2026, 3, 1, 8, 0, tzinfo=UTC)


def state(aggregate: Aggregate) -> dict[str, Any]:
    """Everything but the library's private bookkeeping (pending events …)."""
    public = {k: v for k, v in vars(aggregate).items() if not k.startswith("_")}
    return copy.deepcopy(public) | {
        "id": aggregate.id, "version": aggregate.version,
        "created_on": aggregate.created_on, "modified_on": aggregate.modified_on,
    }


class Recorder:
    """Saves an aggregate held in memory and remembers its state at each version."""

    def __init__(self, ledger: Ledger) -> None:
        self.app = ledger.app
        self.as_of: dict[int, dict[str, Any]] = {}

    def save(self, aggregate: Aggregate) -> None:
        self.app.save(aggregate)
        self.as_of[aggregate.version] = state(aggregate)


def drive_job(ledger: Ledger, rec: Recorder) -> CrawlJob:
    job_id = ledger.app.schedule_job(kind="catalog", url="https://s.example/menu", now=T0,
                                     every=3600)
    job = ledger.app.get_job(job_id)
    rec.as_of[job.version] = state(job)
    now = T0
    steps = [
        lambda: job.dispatch(now),
        lambda: job.lease("w1", "L1", 120, now),
        lambda: job.extend_lease("L1", 600, now + timedelta(seconds=60)),
        lambda: job.fail("L1", "http_5xx", "503", True, 300.0, now + timedelta(seconds=90)),
        lambda: job.lease("w2", "L2", 60, job.next_run_at),
        lambda: job.expire_lease(job.next_run_at + timedelta(hours=1)),
        lambda: job.lease("w3", "L3", 60, job.next_run_at),
        lambda: job.succeed("L3", {"http_status": 200, "content_hash": "x"}, ["p1", "p2"],
                            job.next_run_at + timedelta(seconds=5)),
        lambda: job.lease("w1", "L4", 60, job.next_run_at),
        lambda: job.succeed("L4", {"http_status": 200, "content_hash": "x"}, [],
                            job.next_run_at + timedelta(seconds=5)),
        lambda: job.pause(now + timedelta(days=1)),
        lambda: job.resume(now + timedelta(days=2)),
        lambda: job.force_run(now + timedelta(days=2)),
        lambda: job.add_child("child-1"),
    ]
    for step in steps:
        step()
        rec.save(job)
    return job


def drive_product(ledger: Ledger, rec: Recorder) -> Product:
    store_id = str(ledger.app.register_store(name="S", base_url="https://s.example",
                                             platform="dispensary", now=T0))

    def obs(price: str, availability: str = "in_stock", name: str = "Blue Dream") -> Observation:
        return Observation("sku-1", name, (Offer("1/8oz", Decimal(price), "USD",
                                                 special_price=Decimal(price) - 5),),
                           availability=availability, quantity=7,
                           attributes={"thc": "18.5-21%"})

    product = Product.discover(store_id, obs("45.00"), "job-1", T0)
    moments = iter(T0 + timedelta(hours=h) for h in range(1, 100))
    steps = [
        lambda at: product.observe(obs("45.00"), "job-1", 1, "h1", "v1", at),
        lambda at: product.observe(obs("39.00", name="Blue Dream 1/8"), "job-1", 1, "h2", "v1", at),
        lambda at: product.miss("job-1", at),
        lambda at: product.miss("job-1", at),
        lambda at: product.miss("job-1", at),
        lambda at: product.observe(obs("41.25"), "job-1", 2, "h3", "v2", at),
        lambda at: product.observe(obs("41.25", "out_of_stock"), "job-1", 1, "h4", "v2", at),
    ]
    rec.save(product)
    for step in steps:
        step(next(moments))
        rec.save(product)
    return product


def assert_replays(live: Aggregate, rec: Recorder, store_url: str, tmp_path: Path) -> None:
    with backends.open_ledger(store_url, tmp_path) as fresh:
        assert state(fresh.app.repository.get(live.id)) == state(live)
        assert max(rec.as_of) == live.version and len(rec.as_of) > 5
        for version, expected in rec.as_of.items():  # as of each saved command
            assert state(fresh.app.repository.get(live.id, version=version)) == expected


def test_a_job_replays_exactly_now_and_as_of_each_version(
        ledger: Ledger, store_url: str, tmp_path: Path) -> None:
    rec = Recorder(ledger)
    job = drive_job(ledger, rec)
    assert (job.state, job.boost, job.children, job.attempt) == ("scheduled", 100, ("child-1",), 0)
    assert_replays(job, rec, store_url, tmp_path)


def test_a_product_replays_exactly_now_and_as_of_each_version(
        ledger: Ledger, store_url: str, tmp_path: Path) -> None:
    rec = Recorder(ledger)
    product = drive_product(ledger, rec)
    assert not product.in_stock and product.name == "Blue Dream"  # renamed and back
    assert product.offers["regular:1/8oz"]["special_price"] == Decimal("36.25")
    assert_replays(product, rec, store_url, tmp_path)
