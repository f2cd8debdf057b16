"""The command side: `CrawlLedger`, the only writer of the event store.

Every command takes `now` (a UTC datetime) from its caller, validates
against the aggregates' current state, and saves all resulting events in
one transaction. A refused command raises a `domain.errors.LedgerError` and
records nothing.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, ClassVar, TypeVar
from uuid import UUID

from eventsourcing.domain import MutableOrImmutableAggregate

from domain.alerts import Alerts
from domain.cache import AggregateCache
from domain.chaining import DEFAULT_CATALOG_INTERVAL, DEFAULT_MAX_NEW_JOBS
from domain.controls import JobControls
from domain.crawl_job import CrawlJob, RetryPolicy
from domain.errors import Conflict, InvalidInput, InvalidTransition, NotFound
from domain.images import ProductImages
from domain.job_operations import REOPENABLE
from domain.persistence import LedgerApplication, as_uuid
from domain.ports import Storage
from domain.product import Product
from domain.proxies import ProxyCommands
from domain.recording import ResultRecording
from domain.reextraction import Reextraction
from domain.registry import WorkerRegistry
from domain.store import PLATFORMS, Store
from domain.timeutil import command, utc
from domain.urls import check_url, normalize_url
from domain.values import CrawlTask, Origin, Policy

R = TypeVar("R")


@dataclass(frozen=True)
class LedgerOptions:
    """The command side's tunables (from the operator's settings)."""

    #: interval of catalog and product-page jobs created by chaining (seconds)
    catalog_interval: int = DEFAULT_CATALOG_INTERVAL
    #: crawl delay given to stores found by discovery (None: the Policy default)
    default_crawl_delay: float | None = None
    #: products kept in memory between saves (`AggregateCache`)
    product_cache_size: int = 100_000
    #: crawl jobs kept in memory from their lease here to their result (`dispatch_and_lease`)
    job_cache_size: int = 10_000
    #: stores kept in memory between the slots that dispatch their jobs (`dispatch_and_lease`)
    store_cache_size: int = 10_000
    #: new jobs one result may chain (the excess is counted in the Succeeded event)
    max_new_jobs: int = DEFAULT_MAX_NEW_JOBS
    #: a catalog crawl's unchanged observations go into one `Sightings` event, not one
    #: `Product.Observed` each (`domain.sightings`); False records every one per product
    compact_sightings: bool = True


class CrawlLedger(JobControls, ResultRecording, Reextraction, ProductImages, WorkerRegistry,
                  Alerts, ProxyCommands, LedgerApplication):
    """Stores, crawl jobs and products, and every command on them."""

    name = "CrawlLedger"
    #: a snapshot every so many events (domain.snapshots): loading replays at most that many
    snapshotting_intervals: ClassVar[dict[type[MutableOrImmutableAggregate[Any]], int]] = {
        Store: 20, CrawlJob: 30, Product: 20}

    def __init__(self, storage: Storage, options: LedgerOptions | None = None) -> None:
        super().__init__(storage)
        self.options = options or LedgerOptions()
        self.products: AggregateCache[Product] = AggregateCache(self.options.product_cache_size)
        self.job_cache: AggregateCache[CrawlJob] = AggregateCache(self.options.job_cache_size)
        self.store_cache: AggregateCache[Store] = AggregateCache(self.options.store_cache_size)

    @property
    def default_crawl_delay(self) -> float | None:
        return self.options.default_crawl_delay

    # stores -----------------------------------------------------------------
    @command
    def register_store(self, *, name: str, base_url: str, platform: str, now: datetime,
                       region: str | None = None, timezone: str | None = None,
                       crawl_delay: float | None = None, max_concurrency: int | None = None,
                       respect_robots: bool | None = None, user_agent: str | None = None) -> UUID:
        """Register a store; its id is derived from its base URL."""
        base_url = check_url(base_url)
        store = self.new_store(name=name, base_url=base_url, platform=platform, now=now,
                               region=region, timezone=timezone)
        if self.find(Store, store.id) is not None:
            raise InvalidInput(f"store {base_url} is already registered as {store.id}")
        store.change_policy(crawl_delay, max_concurrency, respect_robots, user_agent)
        self._save(store)
        return store.id

    @staticmethod
    def new_store(*, name: str, base_url: str, platform: str, now: datetime,
                  region: str | None = None, timezone: str | None = None) -> Store:
        if not name.strip():
            raise InvalidInput("store name is empty")
        if platform not in PLATFORMS:
            raise InvalidInput(f"unknown platform {platform!r}; expected one of {', '.join(PLATFORMS)}")
        return Store(base_url=normalize_url(base_url).rstrip("/"), name=name.strip(),
                     platform=platform, region=region, timezone=timezone,
                     registered_at=utc(now))

    @command
    def change_store_policy(self, store_id: UUID | str, *, now: datetime,
                            origin: Origin | None = None, **policy: Any) -> None:
        store = self.get_store(store_id)
        store.change_policy(**policy, origin=origin)
        self._save(store)

    @command
    def disable_store(self, store_id: UUID | str, reason: str, now: datetime,
                      origin: Origin | None = None) -> None:
        store = self.get_store(store_id)
        store.disable(reason, origin)
        self._save(store)

    @command
    def enable_store(self, store_id: UUID | str, now: datetime,
                     origin: Origin | None = None) -> None:
        store = self.get_store(store_id)
        store.enable(origin)
        self._save(store)

    # jobs: scheduling -------------------------------------------------------
    @command
    def schedule_job(self, *, kind: str, url: str, now: datetime, store_id: UUID | str | None = None,
                     every: int | None = None, priority: int = 0,
                     retry_policy: RetryPolicy | None = None, adaptive: bool = True,
                     start_at: datetime | None = None, origin: Origin | None = None,
                     reopen: bool = False) -> UUID:
        """Schedule a crawl job (`every=None`: one-shot). Same kind + URL = same job: with
        `reopen`, one that is cancelled, completed or dead runs again with these settings
        (`Reopened`); otherwise, or when it still runs, scheduling it again is refused."""
        url = check_url(url)
        store = self.get_store(store_id) if store_id is not None else None
        job = self.new_job(kind=kind, url=url, store=store, every=every, priority=priority,
                           retry_policy=retry_policy, adaptive=adaptive,
                           next_run_at=utc(start_at or now), at=utc(now))
        existing = self.find(CrawlJob, job.id)
        if existing is None:
            self._save(job)
        elif reopen and existing.state in REOPENABLE and existing.store_id == job.store_id:
            existing.reopen(utc(now), origin, interval=every, priority=priority,
                            retry_policy=retry_policy or RetryPolicy(), adaptive=adaptive,
                            next_run_at=job.next_run_at)
            self._save(existing)
        else:
            raise InvalidInput(_exists(existing, job))
        return job.id

    @staticmethod
    def new_job(*, kind: str, url: str, store: Store | None, every: int | None, priority: int,
                next_run_at: datetime, at: datetime, retry_policy: RetryPolicy | None = None,
                adaptive: bool = True, parent_job: str | None = None) -> CrawlJob:
        return CrawlJob.schedule(
            kind=kind, url=url, url_norm=normalize_url(url),
            store_id=str(store.id) if store else None, interval=every, priority=priority,
            retry_policy=retry_policy or RetryPolicy(), adaptive=adaptive,
            next_run_at=next_run_at, at=at, parent_job=parent_job,
        )

    @command
    def dispatch_due(self, job_ids: Sequence[UUID | str], now: datetime) -> list[UUID]:
        """Record `Dispatched` for each candidate that is still due (others are skipped),
        all in one save; a job whose store refuses work (disabled) records `Skipped` and
        waits for its next cycle. If another writer changed one of the jobs first, the
        candidates are done one job at a time instead (`dispatch_each`)."""
        at = utc(now)
        wanted = [as_uuid(j, "job") for j in job_ids]
        jobs = self.find_many(CrawlJob, wanted)
        stores = self.find_many(Store, {UUID(j.store_id) for j in jobs.values() if j.store_id})
        changed: list[CrawlJob] = []
        dispatched: list[UUID] = []
        for job_id in wanted:
            job = jobs.get(job_id)
            if job is None:
                raise NotFound(f"unknown job id {job_id}")
            if not job.is_due(at):
                continue
            store = stores.get(UUID(job.store_id)) if job.store_id else None
            if self._dispatch_or_skip(job, store, at):
                dispatched.append(job.id)
            changed.append(job)
        if not changed:
            return []
        try:
            self._save(*changed)
        except Conflict:  # another scheduler, a worker or an operator was first
            return self.dispatch_each(wanted, at)
        return dispatched

    @command
    def dispatch_each(self, job_ids: Sequence[UUID | str], now: datetime) -> list[UUID]:
        """`dispatch_due`, one save per job: a job another writer changed meanwhile is
        passed over, the others are dispatched."""
        at = utc(now)
        dispatched = []
        for job_id in job_ids:
            job = self.get_job(job_id)
            if not job.is_due(at):
                continue
            store = self.get_store(job.store_id) if job.store_id else None
            sent = self._dispatch_or_skip(job, store, at)
            try:
                self._save(job)
            except Conflict:
                continue  # another scheduler dispatched it (or an operator changed it)
            if sent:
                dispatched.append(job.id)
        return dispatched

    @staticmethod
    def _dispatch_or_skip(job: CrawlJob, store: Store | None, at: datetime) -> bool:
        """Dispatch `job`, or record `Skipped` once when its store refuses work (the job
        waits for its next cycle); True when it was dispatched."""
        refusal = store.refuses_work() if store is not None else None
        if refusal:
            job.skip(refusal, at)
            return False
        job.dispatch(at)
        return True

    @command
    def dispatch_and_lease(self, job_ids: Sequence[UUID | str], worker: str, ttl: float,
                           now: datetime) -> list[CrawlTask]:
        """`Dispatched` then `Leased` for each candidate still due, all in one save.

        For a single process that both schedules and crawls (the embedded runner):
        two commands per job become one transaction per slot. A job whose store
        refuses work (disabled) records `Skipped` instead and waits for its next
        cycle. If another writer changed one of the jobs
        first, the slot is done one job at a time instead.
        """
        at = utc(now)
        wanted = [as_uuid(j, "job") for j in job_ids]
        # every slot reads its jobs' few stores: kept here between slots (a copy a command
        # changed since is reloaded, `fresh_cached`), current through the head read first
        position = self.head_position()
        jobs = self.find_many(CrawlJob, wanted)
        stores = self.find_many_cached(
            self.store_cache, Store, {UUID(j.store_id) for j in jobs.values() if j.store_id},
            position)
        self.store_cache.put_many(stores.values(), position)
        chosen: list[tuple[CrawlJob, Store | None]] = []
        skipped: list[CrawlJob] = []
        for job_id in wanted:
            job = jobs.get(job_id)
            if job is None or not job.is_due(at):
                continue
            store = stores.get(UUID(job.store_id)) if job.store_id else None
            if not self._dispatch_or_skip(job, store, at):
                skipped.append(job)
                continue
            job.lease(worker, uuid.uuid4().hex, ttl, at)
            chosen.append((job, store))
        if not chosen and not skipped:
            return []
        try:
            ids = self._save(*(job for job, _ in chosen), *skipped)
        except Conflict:
            tasks = []
            for job_id in self.dispatch_each([job.id for job, _ in chosen], at):
                try:
                    tasks.append(self.lease(job_id, worker, ttl, at))
                except (Conflict, InvalidTransition):
                    continue
            return tasks
        # their results (`record_many`) take them from memory instead of replaying them;
        # a saved aggregate is current through its save's last id (`current_through`)
        self.job_cache.put_many((job for job, _ in chosen), ids[-1] if ids else None)
        return [self.task_for(job, store) for job, store in chosen]

    # jobs: running --------------------------------------------------------
    @command
    def lease(self, job_id: UUID | str, worker: str, ttl: float, now: datetime) -> CrawlTask:
        """Lease a due or dispatched job; of two racing leases exactly one wins."""
        job = self.get_job(job_id)
        store = self.get_store(job.store_id) if job.store_id else None
        refusal = store.refuses_work() if store is not None else None
        if refusal:
            raise InvalidTransition(f"cannot lease job {job.id}: {refusal}")
        job.lease(worker, uuid.uuid4().hex, ttl, utc(now))
        ids = self._save(job)
        # its result takes it from memory (`_leased_job`); current through its save
        self.job_cache.put_many([job], ids[-1] if ids else None)
        return self.task_for(job, store)

    def task_for(self, job: CrawlJob, store: Store | None = None) -> CrawlTask:
        if store is None and job.store_id:
            store = self.get_store(job.store_id)
        assert job.lease_id is not None
        return CrawlTask(
            job_id=str(job.id), lease_id=job.lease_id, attempt=job.attempt, kind=job.kind,
            url=job.url, store_id=job.store_id, platform=store.platform if store else None,
            platform_store_id=store.platform_store_id if store else None,
            policy=store.policy if store else self.storeless_policy(),
        )

    def storeless_policy(self) -> Policy:
        """The politeness of a job that belongs to no store (a feed, a store locator): the
        defaults, with the operator's default crawl delay where one is set."""
        delay = self.default_crawl_delay
        return Policy() if delay is None else Policy(crawl_delay=delay)

    @command
    def extend_lease(self, job_id: UUID | str, lease_id: str, ttl: float, now: datetime) -> None:
        job = self.get_job(job_id)
        job.extend_lease(lease_id, ttl, utc(now))
        self._save(job)

    @command
    def release_lease(self, job_id: UUID | str, lease_id: str, reason: str, now: datetime) -> bool:
        """Give a leased job back unfinished (`LeaseReleased`); False when the lease is
        no longer held (recorded, expired or cancelled meanwhile)."""
        job = self.get_job(job_id)
        if job.state != "leased" or job.lease_id != lease_id:
            return False
        job.release(lease_id, reason, utc(now))
        try:
            self._save(job)
        except Conflict:
            return False
        return True

    @command
    def reap_expired_leases(self, job_ids: Sequence[UUID | str], now: datetime,
                            orphaned: bool = False) -> list[UUID]:
        """Expire the leases of candidates whose lease ran out; each attempt counts as failed.

        `orphaned=True` expires them at once: their holder is known to be gone
        (the single embedded runner restarted after a crash).
        """
        reaped = []
        for job_id in job_ids:
            job = self.get_job(job_id)
            expired = job.lease_expires_at is not None and job.lease_expires_at <= utc(now)
            if job.state != "leased" or not (expired or orphaned):
                continue
            job.expire_lease(utc(now), orphaned=orphaned)
            try:
                self._save(job, *self._stock_unseen(job, utc(now)))
            except Conflict:
                continue  # the worker reported just in time
            reaped.append(job.id)
        return reaped


def _exists(existing: CrawlJob, scheduled: CrawlJob) -> str:
    """Why scheduling `scheduled` again is refused: it exists as `existing`."""
    said = f"a {existing.kind} job for {existing.url_norm} already exists: {existing.id}" \
           f" ({existing.state})"
    if existing.store_id != scheduled.store_id:
        return f"{said} for store {existing.store_id or 'none'}, not {scheduled.store_id or 'none'}"
    if existing.state in REOPENABLE:
        return f"{said}; reopen it to run it again"
    return said
