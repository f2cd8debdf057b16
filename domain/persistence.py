"""The persistence side of `CrawlLedger`: how aggregates are stored, loaded and snapshotted.

`LedgerApplication` is the library's `Application` with the project's storage
choices; `CrawlLedger` (domain.application) adds the commands.

- the backend (`domain.ports.Storage`, one adapter per engine in eventstore/)
  opens the library's recorders and reads many aggregates in a few queries;
- `find_many` loads many aggregates in a few queries: their latest snapshots,
  then only the events after them;
- snapshots are taken from the saved aggregates, spread over saves by aggregate
  id, and written in the save's own transaction; one that cannot be written is
  only logged and never fails the command (`domain.snapshots`).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, TypeVar, cast
from uuid import UUID

from eventsourcing.application import AggregateNotFoundError, Application, ProcessingEvent
from eventsourcing.domain import Aggregate
from eventsourcing.persistence import EventStore, IntegrityError, JSONTranscoder, Mapper, Transcoder

from domain.cache import AggregateCache
from domain.crawl_job import CrawlJob
from domain.errors import Conflict, NotFound
from domain.ports import Storage
from domain.product import Product
from domain.snapshots import register as register_snapshot_transcodings
from domain.store import Store
from domain.transcoder import FastJSONTranscoder, LedgerMapper

log = logging.getLogger(__name__)
A = TypeVar("A", bound=Aggregate)

#: cached copies are checked by the events after their position when there are at most
#: this many a copy, plus `_SCAN_ANYWAY`, else by version. On SQLite (a 500-product
#: bench ledger) reading those events costs ~25 µs + ~0.5 µs an event, the version
#: query ~35 µs + ~2.5 µs a copy: the two are about even at 5 events a copy + 20.
_SCAN_PER_COPY = 4
_SCAN_ANYWAY = 16


class LedgerApplication(Application[UUID]):
    """The library's application with the ledger's storage: binary inserts, snapshots,
    batch loading, and library errors turned into the domain's."""

    def construct_transcoder(self) -> Transcoder:
        """The library's JSON transcoder, writing the same bytes faster (domain.transcoder)."""
        transcoder = FastJSONTranscoder()
        self.register_transcodings(transcoder)
        return transcoder

    def construct_mapper(self) -> Mapper[UUID]:
        """The library's mapper with fewer steps per stored event (domain.transcoder)."""
        return self.factory.mapper(transcoder=self.construct_transcoder(),
                                   mapper_class=LedgerMapper)

    def register_transcodings(self, transcoder: JSONTranscoder) -> None:
        super().register_transcodings(transcoder)
        register_snapshot_transcodings(transcoder)  # aggregate state in snapshots

    def __init__(self, storage: Storage) -> None:
        self.storage = storage
        super().__init__(env=storage.library_env())

    def construct_snapshot_store(self) -> EventStore[UUID]:
        """The backend's snapshot store (PostgreSQL: the binary batch insert)."""
        return self.storage.snapshot_store(self) or super().construct_snapshot_store()

    # loading ----------------------------------------------------------------
    def _get(self, cls: type[A], aggregate_id: UUID | str, what: str) -> A:
        try:
            agg: Any = self.repository.get(as_uuid(aggregate_id, what))
        except AggregateNotFoundError:
            raise NotFound(f"unknown {what} id {aggregate_id}") from None
        if not isinstance(agg, cls):
            raise NotFound(f"unknown {what} id {aggregate_id}")
        return agg

    def get_store(self, store_id: UUID | str) -> Store:
        return self._get(Store, store_id, "store")

    def get_job(self, job_id: UUID | str) -> CrawlJob:
        return self._get(CrawlJob, job_id, "job")

    def get_product(self, product_id: UUID | str) -> Product:
        return self._get(Product, product_id, "product")

    def find(self, cls: type[A], aggregate_id: UUID) -> A | None:
        try:
            agg: Any = self.repository.get(aggregate_id)
        except AggregateNotFoundError:
            return None
        return agg if isinstance(agg, cls) else None

    def find_many(self, cls: type[A], aggregate_ids: Iterable[UUID]) -> dict[UUID, A]:
        """Load many aggregates in a few queries: their latest snapshots, then the events
        after them (missing ids are left out)."""
        wanted = list(dict.fromkeys(aggregate_ids))
        snapshots = (self.storage.select_latest(self.snapshots.recorder, wanted)
                     if self.snapshots else {})
        events = self.storage.select_after(self.recorder, wanted,
                              {i: snap.originator_version for i, snap in snapshots.items()})
        found: dict[UUID, A] = {}
        for aggregate_id in wanted:
            aggregate: Any = None
            if aggregate_id in snapshots:
                snapshot: Any = self.mapper.to_domain_event(snapshots[aggregate_id])
                aggregate = snapshot.mutate(None)
            for event in events.get(aggregate_id, ()):
                domain_event: Any = self.mapper.to_domain_event(event)
                aggregate = domain_event.mutate(aggregate)
            if isinstance(aggregate, cls):
                found[aggregate_id] = aggregate
        return found

    def find_many_cached(self, cache: AggregateCache[A], cls: type[A],
                         aggregate_ids: Iterable[UUID],
                         position: int | None = None) -> dict[UUID, A]:
        """`find_many`, taking from `cache` the copies still at their stored version.

        The caller owns what it gets (taken out of the cache) and puts back only what
        it saved. A copy another writer made stale is left out and loaded afresh: a
        stale copy that emits nothing would never conflict, so the check is needed.
        `position`: as for `fresh_cached`."""
        wanted = set(aggregate_ids)
        found = self.fresh_cached(cache, wanted, position)
        found.update(self.find_many(cls, wanted - found.keys()))
        return found

    def head_position(self) -> int | None:
        """The highest notification id stored where the backend's ids become visible in
        order (everything loaded after this call is current through it), else None."""
        return self.storage.head_position(self.recorder) if self.storage.ordered_positions else None

    def fresh_cached(self, cache: AggregateCache[A], aggregate_ids: set[UUID],
                     position: int | None = None) -> dict[UUID, A]:
        """The cached copies of `aggregate_ids` still current (taken out of `cache`).

        A copy put with the position it was current through is checked against the
        events stored after that position, when those are few: the copy is current
        unless one of them is a later version of it. Any other is checked by its
        version (one query for all). `position`: the head, if the caller read it."""
        entries = cache.take_entries(aggregate_ids)
        if not entries:
            return {}
        positions = [as_of for _, as_of in entries.values()]
        if None not in positions:
            oldest = min(cast(list[int], positions))
            head = position if position is not None else self.head_position()
            if head is not None and 0 <= head - oldest <= _SCAN_PER_COPY * len(entries) + _SCAN_ANYWAY:
                later = (self.storage.changed_after(self.recorder, oldest, entries)
                         if head > oldest else {})
                return {i: a for i, (a, _) in entries.items() if later.get(i, 0) <= a.version}
        current = self.storage.select_versions(self.recorder, entries)
        return {i: a for i, (a, _) in entries.items() if current.get(i) == a.version}

    def history(self, aggregate_id: UUID | str) -> list[Any]:
        """Every stored event of one aggregate, oldest first (decoded)."""
        events = list(self.events.get(as_uuid(aggregate_id, "aggregate")))
        if not events:
            raise NotFound(f"unknown id {aggregate_id}")
        return events

    def _add_snapshots(self, processing_event: ProcessingEvent[UUID],
                       due: Mapping[UUID, Aggregate]) -> None:
        """Add to the save the snapshots of the aggregates `due` (`_snapshot_due`), taken
        from the aggregate in hand (its state is the state being stored; the library
        would reload each one after the save). They are written in the events'
        transaction (`snapshots=`, domain.ports.Storage). A snapshot that cannot be
        taken is only logged (loading then replays a little more)."""
        if self.snapshots is None or not due:
            return
        try:
            snapshots = [self.snapshots.mapper.to_stored_event(type(aggregate).Snapshot.take(
                aggregate)) for aggregate in due.values()]
        except Exception:
            log.warning("could not take %d snapshots; loading replays their events", len(due),
                        exc_info=True)
            return
        processing_event.saved_kwargs["snapshots"] = (self.snapshots.recorder, snapshots)

    def _snapshot_due(self, aggregate: Aggregate, events: Sequence[Any]) -> bool:
        """Whether `aggregate`'s new `events` (consecutive versions) reach one of its
        snapshot versions: every `interval`-th version of its class, offset by its id,
        so the products a catalog discovered together do not all snapshot in the same
        save. Decided from the first and last version, not event by event."""
        interval = self.snapshotting_intervals.get(type(aggregate))
        if not interval or not events:
            return False
        return reaches_snapshot(events[0].originator_version, events[-1].originator_version,
                                aggregate.id.int, interval)

    def _save(self, *aggregates: Aggregate | None) -> Sequence[int]:
        """Save the aggregates' new events in one transaction; their notification ids."""
        try:
            return self._save_aggregates([a for a in aggregates if a is not None])
        except IntegrityError as error:
            raise Conflict(f"a concurrent command changed the same aggregate first: {error}") from None

    def _save_aggregates(self, aggregates: list[Aggregate]) -> Sequence[int]:
        """`Application.save` for our own aggregates, minus two costs of its generality.

        `ProcessingEvent.collect_events` asks `isinstance` of two runtime-checkable
        protocols for every object; on Python 3.11 each check walks the protocol's
        MRO (~10 µs), a tenth of recording a 500-product result. Ours are all
        `Aggregate`s (never events), so collect their events directly.

        `_record` builds a `Recording` (and a frozen `Notification`) per event, ~3 µs
        each, for `_notify` and the deprecated `notify`: hooks for subclasses that
        act on what was saved. The ledger overrides neither (the library's are
        no-ops), so `_append` stores the events without them.
        """
        processing_event: ProcessingEvent[UUID] = ProcessingEvent()
        due: dict[UUID, Aggregate] = {}
        snapshotting = self.snapshots is not None
        for aggregate in aggregates:
            events = aggregate.collect_events()
            processing_event.events.extend(events)
            processing_event.aggregates[aggregate.id] = aggregate
            if snapshotting and self._snapshot_due(aggregate, events):
                due[aggregate.id] = aggregate
        self._add_snapshots(processing_event, due)
        return self._append(processing_event)

    def _append(self, processing_event: ProcessingEvent[UUID]) -> Sequence[int]:
        """The library's `_record` (its event store's `put`) without the recordings;
        the events' notification ids."""
        store = self.events
        ids = store.recorder.insert_events(
            [store.mapper.to_stored_event(event) for event in processing_event.events],
            tracking=processing_event.tracking, **processing_event.saved_kwargs)
        if self.repository.cache and not self.repository.fastforward:
            for aggregate_id, aggregate in processing_event.aggregates.items():
                self.repository.cache.put(aggregate_id, aggregate)
        return ids or ()


def reaches_snapshot(first: int, last: int, offset: int, interval: int) -> bool:
    """Whether a version from `first` to `last` is a snapshot version: one where
    `(version + offset) % interval == 0` (counted, not tried version by version)."""
    return (last + offset) // interval > (first - 1 + offset) // interval


def current_through(as_of: int | None, ids: Sequence[int]) -> int | None:
    """The position through which what a command loaded (current through `as_of`, read
    before it loaded anything) and saved (notification ids `ids`) is current: the save's
    last id when its ids follow `as_of` without a gap (nobody wrote in between), else
    `as_of`. (A saved aggregate is current through the save's last id in any case: an
    event of it committed by another writer before that would have taken one of the
    versions the save wrote.)"""
    if as_of is not None and ids and list(ids) == list(range(as_of + 1, as_of + 1 + len(ids))):
        return ids[-1]
    return as_of


def as_uuid(value: UUID | str, what: str) -> UUID:
    if isinstance(value, UUID):
        return value
    try:
        return UUID(str(value))
    except ValueError:
        raise NotFound(f"unknown {what} id {value!r} (not a valid id)") from None
