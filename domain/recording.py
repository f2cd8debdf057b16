"""Group commit: many crawl results recorded in one transaction, each one still atomic
and independent.

`CrawlLedger.record_many` loads every job of the group in one query, prepares each
result exactly as `record_success` / `record_failure` would (the same domain rules:
`_prepare_success`, `_prepare_failure`) and saves all their events in one
transaction. What keeps each result independent:

- a result the domain refuses (lease lost, unknown job, a bug in one result) fails
  only itself: its error is its answer and nothing of it is saved;
- a result touching an aggregate another result of the group already changed (two
  jobs seeing one product) is left out of the group and recorded on its own after it,
  so one transaction never holds two writes of one aggregate;
- when the group's transaction fails (a concurrent writer got to an aggregate first),
  nothing of it is stored and each of its results is recorded on its own, with the
  usual reload-and-retry on conflict.

A result is therefore saved exactly once, with the events `record_success` would
have saved, in the same per-aggregate order; only the number of commits changes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypeVar, cast
from uuid import UUID

from eventsourcing.domain import Aggregate

from domain import ids
from domain.cache import AggregateCache
from domain.chaining import Aggregates, Chain
from domain.crawl_job import CrawlJob
from domain.errors import Conflict
from domain.gcpause import gc_paused
from domain.outcome import outcome_payload, unique_observations
from domain.persistence import current_through
from domain.ports import Storage
from domain.product import FAILURES_FOR_UNKNOWN_STOCK, Product
from domain.sightings import SightingColumns
from domain.timeutil import command, command_time, utc
from domain.values import CrawlFailure, CrawlSuccess, Observation, Origin

if TYPE_CHECKING:
    from domain.application import LedgerOptions

__all__ = ["PRODUCT_KINDS", "Prepared", "Recorded", "Recording", "ResultRecording"]

A = TypeVar("A")
G = TypeVar("G", bound=Aggregate)
R = TypeVar("R")
#: the job kinds whose results observe products
PRODUCT_KINDS = frozenset({"catalog", "product_page"})


@dataclass(frozen=True)
class Recorded:
    """What recording one crawl result did."""

    job_id: str
    duplicate: bool = False
    events: int = 0
    products: int = 0
    new_products: int = 0
    children: tuple[str, ...] = ()


@dataclass
class Prepared:
    """A result applied to its aggregates in memory, not yet saved."""

    result: Recorded
    aggregates: list[Any] = field(default_factory=list)
    #: products loaded to prepare it (cached once saved, when its job will run again)
    loaded: list[Any] = field(default_factory=list)
    #: its job runs again (recurring): its products are worth keeping in memory
    recurs: bool = False
    #: the position what it loaded is current through (`Loading.position`)
    as_of: int | None = None


@dataclass
class Loading:
    """What one result's recording, or a group's, loads its products through.

    Passed down the calls rather than kept on the application, which other threads
    share (a bot's result recorded while the runner records a group)."""

    #: the highest notification id stored, read before anything was loaded: all that is
    #: loaded is current through it (None where the backend's ids are not ordered)
    position: int | None = None
    #: products the group loaded first, taken by the results that use them
    preloaded: dict[UUID, Product] = field(default_factory=dict)
    #: products the group looked for first and found in no store (new ones)
    absent: frozenset[UUID] = frozenset()
    #: each group result's observed products and their ids, by (job id, outcome's id)
    observed: dict[tuple[UUID, int], Observed] = field(default_factory=dict)


@dataclass(frozen=True)
class Recording:
    """One crawl result to record: a success or a failure of a leased job."""

    job_id: str
    lease_id: str
    outcome: CrawlSuccess | CrawlFailure
    now: datetime
    #: who recorded it (the worker or bot) and through which surface
    origin: Origin | None = None


class ResultRecording:
    """Recording crawl results: one (`record_success`, `record_failure`) or a group
    (`record_many`). A mixin of `CrawlLedger`."""

    RECORD_RETRIES = 3

    if TYPE_CHECKING:  # provided by the application class this is mixed into
        products: AggregateCache[Product]
        job_cache: AggregateCache[CrawlJob]
        options: LedgerOptions
        storage: Storage
        recorder: Any

        def find_many(self, cls: type[A], aggregate_ids: Iterable[UUID]) -> dict[UUID, A]: ...

        def find_many_cached(self, cache: AggregateCache[G], cls: type[G],
                             aggregate_ids: Iterable[UUID],
                             position: int | None = None) -> dict[UUID, G]: ...

        def fresh_cached(self, cache: AggregateCache[G], aggregate_ids: set[UUID],
                         position: int | None = None) -> dict[UUID, G]: ...

        def head_position(self) -> int | None: ...

        def get_job(self, job_id: UUID | str) -> CrawlJob: ...

        def _save(self, *aggregates: Aggregate | None) -> Sequence[int]: ...

    def _retrying(self, command: Callable[..., R], *args: Any) -> R:
        """Run a result-recording command again on a version conflict (a lease heartbeat,
        another writer of the same product); it reloads fresh state each time. (No
        cyclic collection while it runs: `domain.gcpause`.)"""
        with gc_paused():
            for attempt in range(1, self.RECORD_RETRIES + 1):
                try:
                    return command(*args)
                except Conflict:
                    if attempt == self.RECORD_RETRIES:
                        raise
        raise AssertionError("unreachable")

    @command
    def record_failure(self, job_id: UUID | str, lease_id: str, failure: CrawlFailure,
                       now: datetime, origin: Origin | None = None) -> Recorded:
        """Record a failed attempt (never a miss for any product)."""
        return self._retrying(self._record_failure, job_id, lease_id, failure, utc(now),
                              origin)

    def _record_failure(self, job_id: UUID | str, lease_id: str, failure: CrawlFailure,
                        now: datetime, origin: Origin | None) -> Recorded:
        loading = Loading(self.head_position())
        return self._saved(self._prepare_failure(self._leased_job(job_id, loading), lease_id,
                                                 failure, now, loading, origin))

    def _prepare_failure(self, job: CrawlJob, lease_id: str, failure: CrawlFailure,
                         now: datetime, loading: Loading, origin: Origin | None) -> Prepared:
        if job.already_recorded(lease_id):
            return Prepared(Recorded(str(job.id), duplicate=True))
        job.fail(lease_id, failure.error_kind, failure.message, failure.retryable,
                 failure.retry_after, now, origin)
        products = self._stock_unseen(job, now, loading)
        events = sum(len(a.pending_events) for a in (job, *products))
        return Prepared(Recorded(str(job.id), events=events), [job, *products],
                        recurs=not job.one_shot)

    def _saved(self, prepared: Prepared) -> Recorded:
        """Save what a prepared result changed (nothing for a duplicate), in one transaction."""
        if prepared.aggregates:
            ids = self._save(*prepared.aggregates)
            self._cache_saved(prepared, current_through(prepared.as_of, ids))
        return prepared.result

    def _cache_saved(self, prepared: Prepared, as_of: int | None) -> None:
        """Keep the products a saved result loaded (their state is the stored state) when
        its job runs again: the next run loads them from memory, current through `as_of`
        (`persistence.current_through`). A one-shot job's are not loaded again by it,
        and would only hold memory. (A job itself is kept only from its lease to its
        result: `dispatch_and_lease`.)"""
        if prepared.recurs:
            self.products.put_many(prepared.loaded, as_of)

    def _stock_unseen(self, job: CrawlJob, now: datetime,
                      loading: Loading | None = None) -> list[Product]:
        """The products a failing job sees, marked stock-unknown when its failures reach
        the limit (once per run of failures; the next good crawl makes them known)."""
        if (job.kind not in PRODUCT_KINDS or not job.products
                or job.consecutive_failures != FAILURES_FOR_UNKNOWN_STOCK):
            return []
        loaded = self._load_products({UUID(p) for p in job.products}, loading or Loading())
        for product in loaded.values():
            product.lose_sight(str(job.id), job.consecutive_failures, job.last_error, now)
        return [p for p in loaded.values() if p.pending_events]

    @command
    def record_success(self, job_id: UUID | str, lease_id: str, outcome: CrawlSuccess,
                       now: datetime, origin: Origin | None = None) -> Recorded:
        """Atomically record a run's outcome, every product event and chained jobs.

        Submitting the same lease's result again records nothing.
        """
        return self._retrying(self._record_success, job_id, lease_id, outcome, utc(now),
                              origin)

    def _record_success(self, job_id: UUID | str, lease_id: str, outcome: CrawlSuccess,
                        now: datetime, origin: Origin | None) -> Recorded:
        loading = Loading(self.head_position())
        return self._saved(self._prepare_success(self._leased_job(job_id, loading), lease_id,
                                                 outcome, now, loading, origin))

    def _leased_job(self, job_id: UUID | str, loading: Loading) -> CrawlJob:
        """The job, taken from `job_cache` when this process leased it and its copy there
        is still current (no query, or one, instead of replaying it), else loaded; as
        `record_many` takes its group's jobs."""
        key = _uuid(str(job_id))
        if key is not None:
            cached = self.fresh_cached(self.job_cache, {key}, loading.position)
            if key in cached:
                return cached[key]
        return self.get_job(job_id)

    def _prepare_success(self, job: CrawlJob, lease_id: str, outcome: CrawlSuccess,
                         now: datetime, loading: Loading, origin: Origin | None) -> Prepared:
        if job.already_recorded(lease_id):
            return Prepared(Recorded(str(job.id), duplicate=True))
        job.require_lease(lease_id, "record a result for")
        products, loaded, new_ids = self._product_events(job, lease_id, outcome, now, loading)
        chain = Chain(cast(Aggregates, self), job, now, self.options.catalog_interval, self.options.max_new_jobs)
        chain.follow(outcome)
        job.succeed(lease_id, outcome_payload(outcome, chain.dropped, chain.unmatched), new_ids,
                    now, origin)
        aggregates = [job, *products, *chain.aggregates()]
        events = sum(len(a.pending_events) for a in aggregates)
        return Prepared(Recorded(str(job.id), events=events, products=len(outcome.observations),
                                     new_products=len(new_ids), children=chain.children()),
                        aggregates, loaded, recurs=not job.one_shot, as_of=loading.position)

    def _product_events(self, job: CrawlJob, lease_id: str, outcome: CrawlSuccess,
                        now: datetime, loading: Loading
                        ) -> tuple[list[Aggregate], list[Product], list[str]]:
        """The products a result changes, then its `Sightings` (the observations that
        changed nothing, one event: catalog jobs, `LedgerOptions.compact_sightings`);
        the products loaded; the new product ids."""
        if job.kind not in PRODUCT_KINDS or job.store_id is None:
            return [], [], []
        seen, keys = (loading.observed.get((job.id, id(outcome)))
                      or _observed_products(job.store_id, outcome))
        wanted, absent, wanted_text = _touched(job, keys, outcome)
        loaded = self._load_products(wanted | absent, loading)
        changed: list[Aggregate] = []
        unchanged = SightingColumns()
        compact = job.kind == "catalog" and self.options.compact_sightings
        job_ref = str(job.id)
        for pid, obs in seen.items():
            product_uuid = keys[pid]
            if product_uuid not in loaded:
                loaded[product_uuid] = Product.discover(job.store_id, obs, job_ref, now)
            product = loaded[product_uuid]
            offers = product.observe(obs, job_ref, job.attempt, outcome.content_hash,
                                     outcome.extractor_version, now, compact)
            if offers is None:
                changed.append(product)
            else:
                unchanged.add(str(product_uuid), product.version, offers, obs.availability,
                              obs.quantity, dict(obs.attributes))
        for product_uuid in absent & loaded.keys():
            product = loaded[product_uuid]
            lapse = product.gone if outcome.gone else product.miss
            lapse(job_ref, now)
            changed.append(product)
        new_ids = sorted(wanted_text.difference(job.products))
        changed = [p for p in changed if p.pending_events]
        sightings = unchanged.record(job_ref, lease_id, job.attempt, now, outcome.content_hash,
                                     outcome.extractor_version)
        if sightings is not None:
            changed.append(sightings)
        return changed, list(loaded.values()), new_ids

    def _load_products(self, product_ids: set[UUID], loading: Loading) -> dict[UUID, Product]:
        """The products, from those `record_many` loaded for its group first, then the
        cache (when still current), then the store; one the group's load found in
        neither is new, and is not looked for again."""
        preloaded = loading.preloaded
        loaded = {i: preloaded.pop(i) for i in product_ids & preloaded.keys()}
        rest = product_ids - loaded.keys() - loading.absent
        loaded.update(self.find_many_cached(self.products, Product, rest, loading.position))
        return loaded

    def record_many(self, items: Sequence[Recording]) -> list[Recorded | Exception]:
        """Record each item as `record_success`/`record_failure` would, in one transaction
        where they allow it; per item its result, or the error that refused it. (No
        cyclic collection while it runs: `domain.gcpause`.)"""
        with gc_paused():
            return self._record_many(items)

    def _record_many(self, items: Sequence[Recording]) -> list[Recorded | Exception]:
        keys = [_uuid(item.job_id) for item in items]
        loading = Loading(self.head_position())
        # the jobs this process leased are in memory: no replaying them
        jobs = self.find_many_cached(self.job_cache, CrawlJob, [k for k in keys if k is not None],
                                     loading.position)
        answers: dict[int, Recorded | Exception] = {}
        alone: list[int] = []
        group: list[tuple[int, Prepared]] = []
        touched: set[UUID] = set()
        wanted = {p for key, item in zip(keys, items) if key in jobs
                  for p in self._touched_by(jobs[key], item.outcome, loading)}
        loading.preloaded = self._load_products(wanted, loading)
        loading.absent = frozenset(wanted - loading.preloaded.keys())
        for index, (key, item) in enumerate(zip(keys, items)):
            job = jobs.pop(key) if key is not None and key in jobs else None
            if job is None:  # unknown, or twice in the group: on its own after it
                alone.append(index)
                continue
            try:
                with command_time(utc(item.now)):
                    prepared = self._prepare(job, item, loading)
            except Exception as error:  # noqa: BLE001 - it fails only this result
                answers[index] = error
                continue
            ids = {aggregate.id for aggregate in prepared.aggregates}
            if ids & touched:  # one transaction never writes an aggregate twice
                alone.append(index)
                continue
            touched |= ids
            group.append((index, prepared))
        saved: Sequence[int] = ()
        if group:
            try:
                saved = self._save(*(a for _, prepared in group for a in prepared.aggregates))
            except Conflict:
                alone.extend(index for index, _ in group)
                group = []
        as_of = current_through(loading.position, saved)
        for index, prepared in group:
            self._cache_saved(prepared, as_of)
            answers[index] = prepared.result
        for index in sorted(alone):
            answers[index] = self._one(items[index])
        return [answers[index] for index in range(len(items))]

    def _prepare(self, job: CrawlJob, item: Recording, loading: Loading) -> Prepared:
        if isinstance(item.outcome, CrawlSuccess):
            return self._prepare_success(job, item.lease_id, item.outcome, utc(item.now),
                                         loading, item.origin)
        return self._prepare_failure(job, item.lease_id, item.outcome, utc(item.now), loading,
                                     item.origin)

    def _one(self, item: Recording) -> Recorded | Exception:
        try:
            if isinstance(item.outcome, CrawlSuccess):
                return self.record_success(item.job_id, item.lease_id, item.outcome, item.now,
                                           item.origin)
            return self.record_failure(item.job_id, item.lease_id, item.outcome, item.now,
                                       item.origin)
        except Exception as error:  # noqa: BLE001 - refused or failed: this result only
            return error

    def _touched_by(self, job: CrawlJob, outcome: CrawlSuccess | CrawlFailure,
                    loading: Loading) -> set[UUID]:
        """The products recording `outcome` may load (to load a group's in one go); a
        success's observations and product ids are kept for its recording (`observed`)."""
        if job.kind not in PRODUCT_KINDS or job.store_id is None:
            return set()
        if isinstance(outcome, CrawlSuccess):
            seen = loading.observed[(job.id, id(outcome))] = _observed_products(job.store_id,
                                                                                 outcome)
            wanted, absent, _ = _touched(job, seen[1], outcome)
            return wanted | absent
        if job.consecutive_failures + 1 == FAILURES_FOR_UNKNOWN_STOCK:
            return {UUID(p) for p in job.products}
        return set()


#: a result's observations by provider product id, and each one's product (stream) id
Observed = tuple[dict[str, Observation], dict[str, UUID]]


def _observed_products(store_id: str, outcome: CrawlSuccess) -> Observed:
    """The result's observations, unique by provider product id, and their product ids
    (derived once a result: ~2 µs each; `record_many` keeps them for its group)."""
    seen = unique_observations(outcome.observations)
    return seen, {pid: ids.product_id(store_id, pid) for pid in seen}


def _touched(job: CrawlJob, keys: Mapping[str, UUID], outcome: CrawlSuccess
             ) -> tuple[set[UUID], set[UUID], set[str]]:
    """The products a result observes (`keys`: their ids by provider product id), those
    it finds absent (a catalog crawl misses what it no longer lists; a gone page takes
    its product out), and the observed ids as text (as the job lists its products)."""
    wanted = set(keys.values())
    wanted_text = {str(u) for u in wanted}  # str() of a UUID: about half a parse's cost
    if not (job.kind == "catalog" or outcome.gone):
        return wanted, set(), wanted_text
    # parsed are only the products not seen; `- wanted` keeps the result exact
    return wanted, {UUID(p) for p in job.products if p not in wanted_text} - wanted, wanted_text


def _uuid(value: str) -> UUID | None:
    try:
        return UUID(str(value))
    except ValueError:
        return None
