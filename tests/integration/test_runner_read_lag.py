"""The embedded runner while its read models lag behind the ledger, on both backends.

Under load the runner does not catch the read models up on every loop turn (the
catch-up after the results keeps them current): the jobs it dispatched since the
last catch-up are left out of its next slots, so none is offered twice; and a change
made elsewhere (a job scheduled through the API or the CLI) is still seen within a
tick while crawls are in flight."""

from __future__ import annotations

import asyncio
import collections
import threading
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from domain.values import CrawlOutcome, CrawlSuccess, CrawlTask, Observation, Offer
from ledger.bootstrap import Ledger
from ledger.drivers.embedded import EmbeddedRunner
from runtime.clock import SimulatedClock

T0 = datetime(2026, 3, 1, 8, 0, tzinfo=UTC)
BASE = "https://shop.example"


def _success(task: CrawlTask) -> CrawlSuccess:
    observation = Observation(task.url, "P", (Offer("1g", Decimal("5"), "USD"),), "in_stock")
    return CrawlSuccess(200, task.url, "test", "1", "hash", observations=(observation,))


class InstantCrawler:
    async def crawl(self, task: CrawlTask) -> CrawlOutcome:
        await asyncio.sleep(0)  # a real crawl yields to the loop
        return _success(task)


def test_jobs_dispatched_while_the_read_models_lag_are_offered_once(ledger: Ledger) -> None:
    app = ledger.app
    store = app.register_store(name="Shop", base_url=BASE, platform="generic", now=T0)
    jobs = {str(app.schedule_job(kind="product_page", url=f"{BASE}/p/{n}", now=T0,
                                 store_id=store, every=3600)) for n in range(40)}
    ledger.catch_up()
    offered = collections.Counter[str]()
    recorded: set[str] = set()
    all_recorded = threading.Event()
    dispatch_and_lease, record_many, catch_up = (app.dispatch_and_lease, app.record_many,
                                                 ledger.catch_up)

    def counting_dispatch(job_ids: Any, *args: Any) -> Any:
        if any(str(job) in offered for job in job_ids):
            all_recorded.set()  # offered again: let the read models catch up (and fail)
        offered.update(str(job) for job in job_ids)
        return dispatch_and_lease(job_ids, *args)

    def noting_records(items: Any) -> Any:
        answers = record_many(items)
        recorded.update(str(item.job_id) for item in items)
        if recorded >= jobs:
            all_recorded.set()
        return answers

    def lagging_catch_up() -> int:
        # once a slot is out, the read models stay where they were until every job is
        # recorded: each later slot is chosen from a read model that still shows every
        # dispatched job as due
        if offered:
            all_recorded.wait(timeout=60)
        return catch_up()

    app.dispatch_and_lease = counting_dispatch  # type: ignore[method-assign, assignment]
    app.record_many = noting_records  # type: ignore[method-assign]
    ledger.catch_up = lagging_catch_up  # type: ignore[method-assign]
    runner = EmbeddedRunner(ledger, InstantCrawler(), SimulatedClock(T0), concurrency=4,
                            tick_seconds=3600, recover_orphans=False)
    stats = asyncio.run(asyncio.wait_for(runner.run(until_idle=True), 120))

    assert all_recorded.is_set()
    assert set(offered) == jobs
    assert max(offered.values()) == 1, [job for job, n in offered.items() if n > 1]
    assert stats.succeeded == len(jobs)
    assert ledger.read.job_counts() == {"scheduled": len(jobs)}  # every=3600: next hour


class HeldCrawler:
    """Holds the crawl of `held` until released; answers any other at once."""

    def __init__(self, held: str) -> None:
        self.held = held
        self.release = asyncio.Event()
        self.started: dict[str, asyncio.Event] = collections.defaultdict(asyncio.Event)

    async def crawl(self, task: CrawlTask) -> CrawlOutcome:
        self.started[task.url].set()
        if task.url == self.held:
            await self.release.wait()
        await asyncio.sleep(0)
        return _success(task)


def test_a_job_scheduled_elsewhere_is_crawled_while_another_is_in_flight(
        ledger: Ledger) -> None:
    app = ledger.app
    store = app.register_store(name="Shop", base_url=BASE, platform="generic", now=T0)
    slow, later = f"{BASE}/p/slow", f"{BASE}/p/later"
    app.schedule_job(kind="product_page", url=slow, now=T0, store_id=store, every=3600)
    ledger.catch_up()
    crawler = HeldCrawler(slow)

    async def run() -> Any:
        runner = EmbeddedRunner(ledger, crawler, SimulatedClock(T0), concurrency=4,
                                tick_seconds=0.05, recover_orphans=False)
        running = asyncio.create_task(runner.run(until_idle=True))
        try:
            await asyncio.wait_for(crawler.started[slow].wait(), 30)
            # no result is recorded meanwhile, so only the tick's catch-up can show it
            await runner.db.call(app.schedule_job, kind="product_page", url=later, now=T0,
                                 store_id=store, every=3600)
            await asyncio.wait_for(crawler.started[later].wait(), 30)
            assert not crawler.release.is_set()  # the slow crawl is still in flight
        finally:
            crawler.release.set()
        return await asyncio.wait_for(running, 60)

    stats = asyncio.run(run())
    assert stats.succeeded == 2
    assert ledger.read.job_counts() == {"scheduled": 2}
