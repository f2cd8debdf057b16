"""What the agents share in one worker process, built lazily when the worker runs.

Nothing connects at import or at `create_app`: the ledger is bootstrapped on
first use, on the database thread; the crawler (one per process, so its
per-host politeness covers every concurrent crawl) on first crawl.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, TypeVar, cast

from runtime.alert_step import AlertStep
from runtime.clock import Clock, FileClock, SystemClock
from runtime.components import Components
from runtime.db_thread import DbThread
from runtime.defaults import DEFAULTS
from runtime.image_step import ImagePort, ImageStep
from runtime.ledger import Ledger
from runtime.proxy_pool import ProxyKeeper
from runtime.work import CrawlerPort
from streams.topics import Topics

log = logging.getLogger(__name__)

T = TypeVar("T")


@dataclass
class WorkerOptions:
    """Tunables of a worker process (CLI flags; short timeouts in tests)."""

    partitions: int = 4
    crawl_concurrency: int = 4
    lease_ttl: float = DEFAULTS.lease_ttl
    tick_interval: float = DEFAULTS.tick_seconds
    timers: bool = True            # False: an external driver runs the scheduler (demo clock)
    redrive_after: float = 60.0    # re-send work for jobs dispatched this long ago, unleased
    dispatch_ahead: int = 512      # the leader's tick keeps this many jobs dispatched, unleased
    session_timeout: float = 6.0
    heartbeat_interval: float = 2.0
    batch_size: int = DEFAULTS.projection_batch
    batch_within: float = DEFAULTS.batch_within
    stall_check: float = 5.0       # seconds between checks for a projection stuck behind the relay
    datasets_every: float = 30.0   # seconds between Parquet dataset catch-ups (leader; 0: off)
    db_threads: int = 4
    alert_retry_every: float = 15.0  # seconds between sends of the alert retries due (leader)
    images_every: float = 30.0     # seconds between the image leader's sweeps of pending images
    image_concurrency: int = 4     # image downloads in flight at once per worker
    store_patience: float = 600.0  # seconds an agent's batch waits out an unavailable event store
    clock_file: str | None = None  # a FileClock instead of the system clock (demo only)


@dataclass
class Resources:
    components: Components
    options: WorkerOptions
    clock: Clock = field(default_factory=SystemClock)
    db: DbThread = field(init=False)
    _ledger: Ledger | None = field(default=None, init=False)
    _ledger_lock: threading.Lock = field(default_factory=threading.Lock, init=False)
    _crawler: CrawlerPort | None = field(default=None, init=False)
    _stack: AsyncExitStack = field(default_factory=AsyncExitStack, init=False)
    _crawler_lock: asyncio.Lock | None = field(default=None, init=False)
    _closed: bool = field(default=False, init=False)
    #: when the leader last re-sent each job's work item (`agents.redrive`)
    redriven: dict[str, datetime] = field(default_factory=dict, init=False)
    #: this process's name in the worker registry, once its crawl agent has joined
    member: str | None = field(default=None, init=False)
    #: jobs this process's crawl agents are running now (its heartbeats say so)
    in_flight: int = field(default=0, init=False)
    _alerts: AlertStep | None = field(default=None, init=False)
    _images: ImageStep | None = field(default=None, init=False)
    #: keeps the crawler's egress proxy pool in step with the ledger (None: no pool)
    _proxies: ProxyKeeper | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        self.db = DbThread(self.options.db_threads)
        if self.options.clock_file:
            self.clock = FileClock(self.options.clock_file)

    def ledger(self) -> Ledger:
        """The ledger (blocking: call it on the database thread), built once."""
        with self._ledger_lock:  # the database pool has several threads
            if self._ledger is None:
                ledger = self.components.open_ledger()
                self._ledger = ledger
            return self._ledger

    @property
    def topics(self) -> Topics:
        return Topics(self.components.deployment)

    async def identity(self) -> str:
        """The event store's identity (read once, on the database thread)."""
        return await self.call(lambda ledger: ledger.identity)

    async def call(self, fn: Callable[..., T], *args: Any) -> T:
        """Run `fn(ledger, *args)` on the database thread."""
        return await self.db.call(lambda: fn(self.ledger(), *args))

    async def crawler(self) -> CrawlerPort:
        if self._crawler_lock is None:
            self._crawler_lock = asyncio.Lock()
        async with self._crawler_lock:
            if self._crawler is None:
                crawler = await self._stack.enter_async_context(self.components.open_crawler())
                egress = getattr(crawler, "egress", None)
                if egress is not None:
                    self._proxies = await self.call(
                        lambda ledger: ProxyKeeper(ledger, ledger.tables.proxies, egress.pool,
                                                   self.clock.now))
                    await self.keep_proxies()  # the pool is known before the first crawl
                self._crawler = crawler
        return self._crawler

    async def keep_proxies(self) -> None:
        """Record the proxy pool's health changes, save its counters and refresh it from
        the ledger (what the embedded runner does each turn; `streams.app` times it)."""
        keeper = self._proxies
        if keeper is None:
            return
        changes, counters = keeper.take()  # in memory, on this loop
        _, configs = await self.db.call(keeper.persist, changes, counters)
        keeper.pool.update(configs)

    async def alert_step(self) -> AlertStep:
        """The alert handler, with its sender, built once (`streams.agents.alert`)."""
        if self._alerts is None:
            opener = self.components.open_notifier
            if opener is None:
                raise RuntimeError("the alert role needs an alert sender (open_notifier)")
            sender = await self._stack.enter_async_context(opener())
            ledger = await self.db.call(self.ledger)
            self._alerts = AlertStep(ledger, sender, self.clock, self.db)
        return self._alerts

    async def image_step(self) -> ImageStep:
        """The image handler on this process's crawler (its guard, politeness and proxies),
        built once; the projectors keep the read model it sweeps (`streams.agents.images`)."""
        if self._images is None:
            images = cast(ImagePort, await self.crawler())  # the crawler fetches images too
            self._images = await self.call(lambda ledger: ImageStep(
                ledger, images, self.clock, self.db, concurrency=self.options.image_concurrency,
                catch_up=False))
        return self._images

    @property
    def closed(self) -> bool:
        return self._closed

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            await self._stack.aclose()  # the HTTP client
        finally:
            try:
                if self._ledger is not None:
                    if self.member is not None:
                        await self.db.call(_depart, self._ledger, self.member, self.clock.now())
                    await self.db.call(self._ledger.close)
            finally:
                self.db.close()


def _depart(ledger: Ledger, member: str, now: datetime) -> None:
    """Leave the worker registry (an event); a failure only leaves the worker stale."""
    try:
        ledger.app.depart_worker(member, "stopped", now)
    except Exception as error:  # noqa: BLE001 - shutting down: the registry shows it stale
        log.warning("worker %s not deregistered: %s", member, error)

