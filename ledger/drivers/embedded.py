"""The embedded runner: scheduler, worker pool, reaper and projections in one process.

One asyncio loop drives it; ledger calls go through one database thread
(SQLite has one writer). The crawler it is given is a `CrawlerPort`: in-process, or
(`crawl-ledger run` on more than one CPU) `ledger.drivers.crawl_process.CrawlProcess`, the
same crawler in a child process, so crawling and recording run on two cores. The loop:

1. catch the read models up when idle or a tick has passed (under load the
   catch-up after the results keeps them current), reap expired leases;
2. when the queue runs low and half of `concurrency` is free, dispatch and lease
   the next slot of due jobs in one save (`Scheduler.tick_and_lease`, interleaved
   by host; at most three times `concurrency` jobs leased and not yet recorded;
   jobs dispatched since the last catch-up left out: `RecentDispatches`);
3. workers crawl and record (`JobWorker.run_task`), waking the loop when done:
   `concurrency` crawls at once, and twice as many workers, so a result waiting
   for its group commit does not hold a crawl slot;
4. when it was given an image port (the crawler) and the read models list product
   images not tried yet, one image task downloads and records them
   (`runtime.image_step.ImageStep`, bounded concurrency); the run is idle only when
   none is pending;
5. when it was given an alert sender, one alert task matches the events recorded
   since its last pass against the subscriptions and sends the alerts due
   (`runtime.alert_step.AlertStep`); its first pass after a start retries the attempts
   a killed runner left without an outcome, under the same idempotency key.

Stopping (SIGINT/SIGTERM) takes no new slot; leased jobs still queued are
released (`LeaseReleased`, due again at once); crawls in flight have until the
stop deadline (30 s by default) to finish and be recorded, then they are
cancelled and released too; the read models are caught up last. Nothing is
half-recorded because each result is one atomic command. Jobs left `dispatched` by an earlier run are
leased one by one at the next start; a lease left behind by a killed process
is expired at the next start (the embedded runner is the only one per event
store: `crawl-ledger run` holds the store's runner lock, `eventstore.locks`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

import uvloop

from domain.values import CrawlTask
from eventstore import unavailable
from ledger.drivers.crawl_process import CrawlProcess
from ledger.drivers.run_stats import Outage, RunStats
from runtime.alert_channels import SenderPort
from runtime.alert_step import AlertBatch, AlertOptions, AlertStep
from runtime.clock import Clock
from runtime.db_thread import DbThread, first_line
from runtime.defaults import DEFAULTS
from runtime.heartbeats import INTERVAL as HEARTBEAT_INTERVAL
from runtime.heartbeats import Heartbeats, register
from runtime.image_step import ImagePort, ImageStep
from runtime.ledger import Ledger
from runtime.proxy_pool import ProxyKeeper
from runtime.scheduler import RecentDispatches, Scheduler
from runtime.work import CrawlerPort, JobWorker, worker_name

__all__ = ["EmbeddedRunner", "Outage", "RunStats", "run_loop"]

log = logging.getLogger(__name__)
_T = TypeVar("_T")


def run_loop(main: Coroutine[Any, Any, _T]) -> _T:
    """`asyncio.run(main)` on uvloop, the event loop the crawler is measured on.

    uvloop's sockets and callbacks cost less Python than asyncio's own loop: the
    crawl bench (docs/benchmarks.md) did ~13 % more pages a minute on it,
    with less CPU per page. Everything else about the loop is the same.
    """
    return uvloop.run(main)


class EmbeddedRunner:
    """Runs the whole crawl loop in-process until idle or stopped."""

    def __init__(self, ledger: Ledger, crawler: CrawlerPort, clock: Clock, *,
                 concurrency: int = 8, lease_ttl: float = DEFAULTS.lease_ttl,
                 tick_seconds: float = DEFAULTS.tick_seconds,
                 recover_orphans: bool = True,
                 on_change: Callable[[RunStats], None] | None = None,
                 max_outage: float = 600.0, images: ImagePort | None = None,
                 image_concurrency: int = 4, alerts: SenderPort | None = None,
                 alert_options: AlertOptions | None = None,
                 proxies: ProxyKeeper | None = None) -> None:
        self.ledger = ledger
        self.crawler = crawler
        #: keeps the crawler's egress proxy pool in step with the ledger (None: no pool)
        self.proxies = proxies
        self.clock = clock
        self.concurrency = concurrency
        self.tick_seconds = tick_seconds
        self.recover = recover_orphans
        self.on_change = on_change or (lambda stats: None)
        self.db = DbThread(1)
        # read models live in their own SQLite file: catch them up beside the ledger thread
        self.projector = DbThread(1)
        self._recorded = asyncio.Event()
        self.scheduler = Scheduler(ledger, slot_size=max(concurrency * 2, 8))
        # twice as many workers as crawl slots: a worker whose result waits for its group
        # commit has given its slot to the next leased job (JobWorker `crawl_slots`)
        slots = asyncio.Semaphore(concurrency)
        self.workers = [JobWorker(ledger, crawler, clock, self.db, worker_name(i), lease_ttl,
                                  crawl_slots=slots) for i in range(2 * concurrency)]
        self.images = (ImageStep(ledger, images, clock, self.db, self.projector,
                                 concurrency=image_concurrency) if images is not None else None)
        self._imaging: asyncio.Task[None] | None = None
        self.alerts = (AlertStep(ledger, alerts, clock, self.db, self.projector, alert_options)
                       if alerts is not None else None)
        self._alerting: asyncio.Task[AlertBatch] | None = None
        self._alert_passes = 0
        self.stats = RunStats()
        # a job id (dispatched earlier: the worker leases it) or a task already leased to
        # this runner together with its dispatch (one save per slot)
        self._queue: asyncio.Queue[str | CrawlTask] = asyncio.Queue()
        self.lease_ttl = lease_ttl
        self.holder = worker_name(0).rsplit(":", 1)[0] + ":runner"
        self._wake = asyncio.Event()
        self._stopping = False
        self._heartbeats: Heartbeats | None = None
        self._next_beat = 0.0
        #: since when the event store has been unreachable (None: it is reachable)
        self._outage: Outage | None = None
        #: seconds of outage after which the runner gives up (exits with the error)
        self.max_outage = max_outage
        self._stop_by: float | None = None  # loop time by which in-flight crawls must end
        self._finished = 0  # jobs finished so far: a change during a step means "not idle"
        self._recent = RecentDispatches()  # left out of the next slots until caught up
        self._caught_up_at = float("-inf")  # loop time the last catch-up started

    def stop(self, deadline: float = DEFAULTS.stop_deadline) -> None:
        """Take no new jobs; leased jobs not started yet are released (`LeaseReleased`);
        crawls in flight have `deadline` seconds to finish and be recorded, after which
        they are cancelled and their leases released."""
        self._stopping = True
        if self._stop_by is None:
            self._stop_by = asyncio.get_running_loop().time() + deadline
        self._wake.set()

    async def run(self, until_idle: bool = False) -> RunStats:
        try:
            await self._start()
            await self._loop(until_idle)
            await self._depart("idle" if until_idle else "stopped")
        finally:
            self.db.close()
            self.projector.close()
        return self.stats

    async def _depart(self, reason: str) -> None:
        try:
            await self.db.call(self.ledger.app.depart_worker, self.holder, reason,
                               self.clock.now())
        except Exception as error:  # noqa: BLE001 - leaving the registry must not fail a run
            log.warning("worker %s not deregistered: %s", self.holder, first_line(error))

    async def _loop(self, until_idle: bool) -> None:
        tasks = [asyncio.create_task(self._work(w)) for w in self.workers]
        projecting = asyncio.create_task(self._project())
        try:
            while not self._stopping:
                try:
                    idle = await self._step()
                    self._outage = None
                except Exception as error:
                    if not unavailable(error):
                        raise
                    idle = False
                    self._outage = self._outage or Outage(asyncio.get_running_loop().time())
                    await self._outage.pause(error, self.max_outage)
                if idle and until_idle:
                    break
                await self._sleep()
        finally:
            self._stopping = True
            for _ in tasks:
                self._queue.put_nowait("")  # wake idle workers so they exit
            await self._finish_in_flight(tasks)
            await self._stop_images()
            await self._stop_alerts()
            projecting.cancel()
            await asyncio.gather(projecting, return_exceptions=True)
            try:
                await self._catch_up()
            except Exception as error:
                if not unavailable(error):
                    raise
                log.warning("read models not caught up at exit (event store unavailable): %s",
                            first_line(error))

    async def _finish_in_flight(self, tasks: list[asyncio.Task[None]]) -> None:
        """Wait for the crawls in flight until the stop deadline, then cancel the rest
        (each cancelled crawl releases its lease: `JobWorker.run_task`)."""
        loop = asyncio.get_running_loop()
        timeout = None if self._stop_by is None else max(self._stop_by - loop.time(), 0.0)
        _, late = await asyncio.wait(tasks, timeout=timeout)
        for task in late:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def _stop_images(self) -> None:
        """Downloads in flight are dropped (their products stay pending: nothing recorded)."""
        if self._imaging is not None and not self._imaging.done():
            self._imaging.cancel()
        if self._imaging is not None:
            await asyncio.gather(self._imaging, return_exceptions=True)

    async def _stop_alerts(self) -> None:
        """The alert pass has until the stop deadline; one still sending then is dropped
        (its attempt has no outcome: the next start sends it again under the same key)."""
        if self._alerting is None:
            return
        timeout = (None if self._stop_by is None
                   else max(self._stop_by - asyncio.get_running_loop().time(), 0.0))
        await asyncio.wait([self._alerting], timeout=timeout)
        self._alerting.cancel()
        results = await asyncio.gather(self._alerting, return_exceptions=True)
        if isinstance(results[0], AlertBatch):
            self.stats.note_alerts(results[0])

    def _alerts_busy(self) -> bool:
        """Start an alert pass when none runs; True while one runs or the last one did
        something (the next pass may find more)."""
        if self.alerts is None or self._stopping:
            return False
        task = self._alerting
        if task is not None and not task.done():
            return True
        busy = False
        if task is not None:
            done = task.result()  # raises what ended it (an outage: the loop waits)
            self.stats.note_alerts(done)
            busy = done.recorded > 0
        self._alerting = asyncio.create_task(self._alert_pass(self.alerts))
        return True if task is None else busy

    async def _alert_pass(self, step: AlertStep) -> AlertBatch:
        try:
            self._alert_passes += 1
            return await step.run_once(orphaned=self.recover and self._alert_passes == 1)
        finally:
            self._wake.set()

    async def _images_due(self) -> bool:
        """Start the image task when images are pending; True while it runs or any is."""
        if self.images is None or self._stopping:
            return False
        if self._imaging is not None and not self._imaging.done():
            return True
        if self._imaging is not None:
            self._imaging.result()  # raises what ended it (an outage: the loop waits)
            self._imaging = None
        if not await self.images.has_pending():
            return False
        self._imaging = asyncio.create_task(self._fetch_images(self.images))
        return True

    async def _fetch_images(self, step: ImageStep) -> None:
        try:
            while True:
                await self._catch_up()  # the last batch's records
                batch = await step.run_batch()
                self.stats.note_images(batch)
                if batch.recorded == 0 and not await step.has_pending():
                    return
                self._recorded.set()
                self.on_change(self.stats)
        finally:
            self._finished += 1
            self._wake.set()

    async def _project(self) -> None:
        """Catch the read models up as soon as results are recorded (not a loop turn later),
        at most once every `project_every` seconds: results arriving meanwhile share one
        catch-up. A catch-up that took longer has batched enough: the next one starts at
        once (under load a catch-up outlasts the interval, and a pause after it would
        only add to every result's wait)."""
        loop = asyncio.get_running_loop()
        while True:
            await self._recorded.wait()
            self._recorded.clear()
            started = loop.time()
            try:
                await self._catch_up()
            except Exception as error:
                if not unavailable(error):
                    raise
                self._recorded.set()  # try again once the store is back
                await asyncio.sleep(1.0)
            await asyncio.sleep(max(0.0, DEFAULTS.project_every - (loop.time() - started)))

    async def _catch_up(self) -> None:
        """Catch the read models up; afterwards they show every dispatch that returned
        before it started."""
        mark = self._recent.mark()
        self._caught_up_at = asyncio.get_running_loop().time()
        await self.projector.call(self.ledger.catch_up)
        self._recent.seen(mark)

    async def _start(self) -> None:
        await self.db.call(register, self.ledger, self.holder, "embedded", self.concurrency,
                           ["all"], self.clock.now())
        self._heartbeats = Heartbeats(self.ledger.tables.heartbeats)
        await self._catch_up()
        if self.recover:
            reaped = await self.db.call(self.scheduler.recover_orphans, self.clock.now())
            self.stats.reaped += len(reaped)
            await self._catch_up()
        for job_id in await self.db.call(self.scheduler.dispatched):
            self._queue.put_nowait(job_id)

    async def _step(self) -> bool:
        """One loop turn; True when nothing is due, queued or running. It catches the
        read models up only when nothing is queued or running (the idle decision reads
        them) or none started within a tick (the API's changes show within a tick);
        else `_project`'s catch-ups keep them current (docs/benchmarks.md)."""
        finished = self._finished
        loop_time = asyncio.get_running_loop().time()
        if (self._queue.empty() and self.stats.in_flight == 0
                or loop_time - self._caught_up_at >= self.tick_seconds):
            await self._catch_up()
        await self._keep_proxies()  # before dispatch: the crawls need an up-to-date pool
        now = self.clock.now()
        self.stats.reaped += len(await self.db.call(self.scheduler.reap, now))
        dispatched: list[CrawlTask] = []
        room = 3 * self.concurrency - self._queue.qsize() - self.stats.in_flight
        # a slot once half the crawl slots' worth is free: not a save for every job
        # finished (each save has its cost) while the queue still holds enough to crawl
        if self._queue.qsize() < self.concurrency and room >= max(1, self.concurrency // 2):
            dispatched = await self.db.call(self.scheduler.tick_and_lease, now, self.holder,
                                            self.lease_ttl, room, self._recent.jobs())
            self._recent.add(task.job_id for task in dispatched)
            for task in dispatched:
                self._queue.put_nowait(task)
            self.stats.dispatched += len(dispatched)
        self.stats.queued = self._queue.qsize()
        imaging = await self._images_due()
        alerting = self._alerts_busy()
        await self._beat()
        self.on_change(self.stats)
        return (not dispatched and self._queue.empty() and self.stats.in_flight == 0
                and not imaging and not alerting and finished == self._finished)

    async def _keep_proxies(self) -> None:
        """Record the proxy pool's health changes and refresh it from the ledger."""
        if self.proxies is None:
            return
        changes, counters = self.proxies.take()
        _, configs = await self.db.call(self.proxies.persist, changes, counters)
        self.proxies.pool.update(configs)

    async def _beat(self) -> None:
        """A heartbeat every `INTERVAL` seconds of loop time (not an event)."""
        loop_time = asyncio.get_running_loop().time()
        if self._heartbeats is None or loop_time < self._next_beat:
            return
        self._next_beat = loop_time + HEARTBEAT_INTERVAL
        # a crawl process's memory and CPU are the runner's too
        helpers = (await self.crawler.process_stats() if isinstance(self.crawler, CrawlProcess)
                   else (0, 0.0))
        await self.projector.call(self._heartbeats.beat, self.holder, self.stats.in_flight,
                                  self.clock.now(), helpers)

    async def _sleep(self) -> None:
        try:
            await asyncio.wait_for(self._wake.wait(), timeout=self.tick_seconds)
        except TimeoutError:
            pass
        self._wake.clear()

    async def _work(self, worker: JobWorker) -> None:
        while True:
            item = await self._queue.get()
            if isinstance(item, CrawlTask) and self._stopping:  # leased, never started
                await worker.release(item, "the runner is stopping")
                continue
            if isinstance(item, CrawlTask):
                job_id = item.job_id
            elif self._stopping or not item:
                return
            else:
                job_id = item
            self.stats.in_flight += 1
            try:
                report = await (worker.run_task(item) if isinstance(item, CrawlTask)
                                else worker.run(job_id))
                if report is not None:
                    self.stats.note(report)
                    self._recorded.set()
            except Exception:  # noqa: BLE001 - a bug in one job must not stop the pool
                log.exception("job %s: unexpected error in the worker", job_id)
            finally:
                self.stats.in_flight -= 1
                self._finished += 1
                self._wake.set()
