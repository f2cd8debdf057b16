"""Crawl slots (`JobWorker(crawl_slots=…)`, as the embedded runner runs its workers), on
both backends: a worker gives its slot back when its crawl ends, so the next leased job
is fetched while the earlier result still waits for its commit; never more crawls at
once than slots; every result is still recorded."""

from __future__ import annotations

import asyncio
import threading
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from domain.recording import Recorded
from domain.values import CrawlOutcome, CrawlSuccess, CrawlTask, Observation, Offer
from ledger.bootstrap import Ledger
from runtime.clock import SimulatedClock
from runtime.db_thread import DbThread
from runtime.work import JobWorker

T0 = datetime(2026, 3, 1, 8, 0, tzinfo=UTC)
BASE = "https://shop.example"


class CountingCrawler:
    """Answers at once; counts the crawls running together and tells when each started."""

    def __init__(self) -> None:
        self.running = self.most = 0
        self.started: dict[str, asyncio.Event] = {}

    async def crawl(self, task: CrawlTask) -> CrawlOutcome:
        self.running += 1
        self.most = max(self.most, self.running)
        self.started.setdefault(task.job_id, asyncio.Event()).set()
        await asyncio.sleep(0)  # a real crawl yields to the loop
        self.running -= 1
        observation = Observation(task.url, "P", (Offer("1g", Decimal("5"), "USD"),), "in_stock")
        return CrawlSuccess(200, task.url, "test", "1", "hash", observations=(observation,))


def test_the_next_crawl_runs_while_a_result_waits_for_its_commit(ledger: Ledger) -> None:
    app = ledger.app
    store = app.register_store(name="Shop", base_url=BASE, platform="generic", now=T0)
    jobs = [app.schedule_job(kind="product_page", url=f"{BASE}/p/{n}", now=T0, store_id=store,
                             every=3600) for n in range(2)]
    first, second = app.dispatch_and_lease(jobs, "runner", 600, T0)
    commit_open = threading.Event()
    record_many = app.record_many

    def held_back(items: Any) -> Any:  # the database thread is busy with an earlier group
        commit_open.wait(timeout=30)
        return record_many(items)

    app.record_many = held_back  # type: ignore[method-assign]
    crawler = CountingCrawler()
    db = DbThread(1)

    async def run() -> list[Any]:
        slots = asyncio.Semaphore(1)
        workers = [JobWorker(ledger, crawler, SimulatedClock(T0), db, f"w{n}", crawl_slots=slots)
                   for n in range(2)]
        running = [asyncio.create_task(workers[0].run_task(first))]
        await asyncio.wait_for(crawler.started.setdefault(first.job_id, asyncio.Event()).wait(), 30)
        running.append(asyncio.create_task(workers[1].run_task(second)))
        # the second crawl gets the one slot although the first result is not committed
        await asyncio.wait_for(crawler.started.setdefault(second.job_id, asyncio.Event()).wait(),
                               30)
        assert not any(task.done() for task in running)
        commit_open.set()
        return await asyncio.gather(*running)

    try:
        reports = asyncio.run(run())
    finally:
        commit_open.set()
        db.close()
    assert crawler.most == 1
    assert all(isinstance(r.result, Recorded) and r.result.new_products == 1
               for r in reports)
    assert {app.get_job(job).state for job in jobs} == {"scheduled"}
