"""Task chaining: what a successful discovery-type run schedules next.

store discovery -> stores + their entry-point (or catalog) jobs;
entry point -> the store's platform id + its catalog job;
feed -> one product-page job per normalised product URL (deduplicated:
the job id is derived from the URL, so a link seen again finds its job).
Chained jobs run now, above batch work (`CHAIN_PRIORITY_BOOST`).
"""

from __future__ import annotations

from datetime import datetime
from typing import Protocol, TypeVar
from uuid import UUID

from eventsourcing.domain import Aggregate

from domain import ids
from domain.crawl_job import CrawlJob, RetryPolicy
from domain.errors import InvalidInput
from domain.store import Store
from domain.values import CrawlSuccess, DiscoveredStore

A = TypeVar("A", bound=Aggregate)
CHAIN_PRIORITY_BOOST = 10
DEFAULT_CATALOG_INTERVAL = 4 * 3600
#: new jobs one result may chain; the rest are counted (`Succeeded.outcome.dropped`) and
#: found again by the parent's next run, when the ones created now already exist
DEFAULT_MAX_NEW_JOBS = 1000


class Aggregates(Protocol):
    """What chaining needs of the application: look aggregates up, make new ones."""

    @property
    def default_crawl_delay(self) -> float | None: ...

    def find(self, cls: type[A], aggregate_id: UUID) -> A | None: ...

    def new_store(self, *, name: str, base_url: str, platform: str, now: datetime,
                  region: str | None = None, timezone: str | None = None) -> Store: ...

    def new_job(self, *, kind: str, url: str, store: Store | None, every: int | None,
                priority: int, next_run_at: datetime, at: datetime,
                retry_policy: RetryPolicy | None = None, adaptive: bool = True,
                parent_job: str | None = None) -> CrawlJob: ...


class Chain:
    """Collects the stores and child jobs one run's outcome leads to."""

    def __init__(self, app: Aggregates, parent: CrawlJob, now: datetime,
                 catalog_interval: int = DEFAULT_CATALOG_INTERVAL,
                 max_new_jobs: int = DEFAULT_MAX_NEW_JOBS) -> None:
        self.app = app
        self.parent = parent
        self.now = now
        self.catalog_interval = catalog_interval
        self.max_new_jobs = max_new_jobs
        #: links/stores left out because the result already chained `max_new_jobs` new jobs
        self.dropped = 0
        #: feed links to origins where no store is registered, by origin (not crawled)
        self.unmatched: dict[str, int] = {}
        self.stores: dict[str, Store] = {}
        self.jobs: dict[str, CrawlJob] = {}

    def aggregates(self) -> list[Store | CrawlJob]:
        return [*self.stores.values(), *self.jobs.values()]

    def children(self) -> tuple[str, ...]:
        return tuple(self.jobs)

    def follow(self, outcome: CrawlSuccess) -> None:
        kind = self.parent.kind
        if kind == "store_discovery":
            for found in outcome.stores:
                if self._full():
                    continue
                self._discovered_store(found)
        elif kind == "entry_point" and outcome.platform_store_id:
            self._entry_point(outcome.platform_store_id, outcome.catalog_url)
        elif kind == "feed":
            for link in outcome.links:
                if self._full():
                    continue
                self._feed_link(link)

    def _full(self) -> bool:
        if len(self.jobs) < self.max_new_jobs:
            return False
        self.dropped += 1
        return True

    def _store(self, store_id: str) -> Store | None:
        if store_id not in self.stores:
            found = self.app.find(Store, UUID(store_id))
            if found is None:
                return None
            self.stores[store_id] = found
        return self.stores[store_id]

    def _discovered_store(self, found: DiscoveredStore) -> None:
        try:
            store = self.app.new_store(name=found.name, base_url=found.base_url,
                                       platform=found.platform, now=self.now,
                                       region=found.region, timezone=found.timezone)
        except InvalidInput:
            return  # one unusable locator entry (unknown platform, bad URL) must not sink the run
        existing = self._store(str(store.id))
        if existing is None:
            store.change_policy(crawl_delay=self.app.default_crawl_delay)
            self.stores[str(store.id)] = store
        store = self.stores[str(store.id)]
        store.mark_discovered(str(self.parent.id))
        kind = "entry_point" if found.platform == "dispensary" else "catalog"
        self._child(kind, found.entry_url, store)

    def _entry_point(self, platform_store_id: str, catalog_url: str | None) -> None:
        store = self._store(self.parent.store_id) if self.parent.store_id else None
        if store is None:
            return
        store.resolve_entry_point(platform_store_id)
        self._child("catalog", catalog_url or self.parent.url, store)

    def _feed_link(self, link: str) -> None:
        origin = ids.origin(link)
        store = self._store(str(ids.store_id(origin)))
        if store is None:
            self.unmatched[origin] = self.unmatched.get(origin, 0) + 1
            return
        self._child("product_page", link, store)

    def _child(self, kind: str, url: str, store: Store) -> None:
        if store.refuses_work():
            return  # e.g. an operator disabled it: find nothing new to crawl there
        every = None if kind == "entry_point" else self.catalog_interval
        job = self.app.new_job(kind=kind, url=url, store=store, every=every,
                               priority=max(self.parent.priority, 0) + CHAIN_PRIORITY_BOOST,
                               next_run_at=self.now, at=self.now, parent_job=str(self.parent.id))
        if str(job.id) in self.jobs or self.app.find(CrawlJob, job.id) is not None:
            return
        self.jobs[str(job.id)] = job
        self.parent.add_child(str(job.id))
