"""What every backend adapter shares: batch reads of many aggregates, chunked.

Recording a catalog crawl touches hundreds of products; one round trip per
product would blow the recording budget, so the application loads them all
at once and folds each stream itself. Each backend supplies the SQL of one
chunk (`_after_chunk`, `_latest_chunk`, `_versions_chunk`) and of one
notification-log batch (`notification_rows`).
"""

from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from collections import defaultdict
from collections.abc import Collection, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Any
from uuid import UUID, uuid4

from eventsourcing.persistence import AggregateRecorder, EventStore, StoredEvent

from domain.envelope import StoredRow
from domain.errors import EventStoreNotEmpty
from eventstore.locks import Holder

log = logging.getLogger(__name__)

CHUNK = 500  # ids per query (SQLite's parameter limit is far above this)
#: (position, originator id, version, topic, state) of an imported event
ImportRow = tuple[int, UUID, int, str, bytes]
#: a stored event as the audit chain hashes it, with its stored link (None if it has none):
#: (notification id, originator id as stored, version, topic, state, link)
LinkedRow = tuple[int, Any, Any, Any, Any, "bytes | None"]
#: a save's snapshots for the application recorder: (the snapshot recorder, its rows)
Snapshots = tuple[AggregateRecorder, Sequence[StoredEvent]]


class Backend(ABC):
    """One event-store backend: the library's settings plus the project's fast paths."""

    name: str
    #: the notification read returns ids as canonical text (no UUID objects to make)
    canonical_ids: bool = False
    #: a long catch-up overlaps the next read with decoding (worth it over a network)
    reads_ahead: bool = False
    #: notification ids become visible in their order: a reader that sees an id sees
    #: every lower id that will ever be committed (SQLite: one writer at a time, and a
    #: row's id is one past the largest). A cached copy can then be checked against the
    #: events stored after a position (`changed_after`) instead of by its version.
    ordered_positions: bool = False

    @abstractmethod
    def library_env(self) -> dict[str, str]:
        """The eventsourcing library's settings that open this backend."""

    @abstractmethod
    def describe(self) -> str:
        """Where the store is, for messages (never a password)."""

    def snapshot_store(self, app: Any) -> EventStore[UUID] | None:
        return None  # the library's own

    @abstractmethod
    def runner_lock(self, holder: Holder) -> AbstractContextManager[Holder]:
        """Hold the store for one runner; `StoreLocked` (naming the holder) if taken."""

    def discard_broken(self, recorder: Any) -> None:  # noqa: B027 - a default, not abstract
        """After an operation failed: drop the pooled connections the server has closed
        (it restarted), so the next operation gets a new one. Nothing to do in-process."""

    def identity(self, recorder: Any) -> str:
        """This event store's identity: a UUID made once, when it is first asked for, and kept
        in the store (envelopes carry it, so readers can refuse another store's events)."""
        new = str(uuid4())
        with recorder.datastore.transaction(commit=True) as cursor:
            cursor.execute(f"CREATE TABLE IF NOT EXISTS {self._identity_table(recorder)} "
                           "(only_row INTEGER PRIMARY KEY, id TEXT NOT NULL)")
            cursor.execute(self._insert_identity(recorder), (new,))
            cursor.execute(f"SELECT id FROM {self._identity_table(recorder)}")
            row = cursor.fetchone()
        return str(row["id"] if isinstance(row, dict) else row[0])

    def _identity_table(self, recorder: Any) -> str:
        return "ledger_identity"

    def _insert_identity(self, recorder: Any) -> str:
        return (f"INSERT INTO {self._identity_table(recorder)} (only_row, id) VALUES (1, ?) "
                "ON CONFLICT (only_row) DO NOTHING")

    @abstractmethod
    def notification_rows(self, recorder: Any, after: int, limit: int) -> list[StoredRow]:
        """(position, originator id, version, topic, state) after `after`, in order."""

    @abstractmethod
    def notification_heads(self, recorder: Any, after: int, limit: int
                           ) -> list[tuple[int, UUID | str, str]]:
        """(position, originator id, topic) after `after`, in order: `notification_rows`
        without the states (a reader that keeps a few types of a window reads only
        theirs, `rows_at`)."""

    @abstractmethod
    def rows_at(self, recorder: Any, positions: Sequence[int]) -> list[StoredRow]:
        """The `notification_rows` of these positions, in order."""

    @abstractmethod
    def stream_rows(self, recorder: Any, stream_id: UUID, after: int = 0,
                    last: int | None = None) -> list[StoredRow]:
        """One stream's (position, originator id, version, topic, state), by version: those
        after position `after`, and of them only the newest `last` (None: all). Read
        through the (originator id, version) key, newest first when `last` bounds it, so
        a bounded read costs the same however long the stream is."""

    @abstractmethod
    def import_rows(self, recorder: Any, batches: Iterable[Sequence[ImportRow]]) -> int:
        """Insert the rows of an export into an empty event store, keeping their positions
        (notification ids), in one transaction: all of them or, if anything fails (a row,
        or `batches` raising), none. Raises `EventStoreNotEmpty` if the store has events."""

    @abstractmethod
    def chain_rows(self, recorder: Any, after: int, limit: int) -> list[LinkedRow]:
        """The stored events after notification id `after`, in order, each with its audit
        chain link (`eventstore.chain`); the columns as stored, ids as 32 hex digits."""

    @abstractmethod
    def originator_ids(self, recorder: Any) -> list[UUID]:
        """Every originator id in `recorder`'s table (used on the snapshots table)."""

    @abstractmethod
    def _after_chunk(self, recorder: Any, ids: list[UUID], floors: list[int]) -> list[Any]: ...

    @abstractmethod
    def _latest_chunk(self, recorder: Any, ids: list[UUID]) -> list[Any]: ...

    @abstractmethod
    def _versions_chunk(self, recorder: Any, ids: list[UUID]) -> list[tuple[Any, Any]]: ...

    @abstractmethod
    def _originator(self, recorder: Any, value: Any) -> UUID: ...

    def select_after(self, recorder: AggregateRecorder, ids: Iterable[UUID],
                     after: Mapping[UUID, int] | None = None) -> dict[UUID, list[StoredEvent]]:
        """The stored events of each id after version `after[id]` (all of them for ids not
        in `after`), in version order; ids without such events are absent.

        One query per chunk of ids, each id joined with its own starting version
        (snapshot versions are offset by id, so a catalog's products all differ).
        """
        after = after or {}
        found: dict[UUID, list[StoredEvent]] = defaultdict(list)
        for chunk in _chunks(ids):
            for row in self._after_chunk(recorder, chunk, [after.get(i, 0) for i in chunk]):
                found[self._originator(recorder, row["originator_id"])].append(
                    self._stored(recorder, row))
        return dict(found)

    def select_latest(self, recorder: AggregateRecorder,
                      ids: Iterable[UUID]) -> dict[UUID, StoredEvent]:
        """The highest-version record of each id (used on the snapshots table)."""
        rows = [row for chunk in _chunks(ids) for row in self._latest_chunk(recorder, chunk)]
        return {self._originator(recorder, r["originator_id"]): self._stored(recorder, r)
                for r in rows}

    def delete_records(self, recorder: AggregateRecorder, ids: Iterable[UUID]) -> None:
        """Delete every record of `ids` from `recorder`'s table: only ever the snapshots
        table (derived data; the event log is never deleted from)."""
        for chunk in _chunks(ids):
            self._delete_chunk(recorder, chunk)

    @abstractmethod
    def _delete_chunk(self, recorder: Any, ids: list[UUID]) -> None: ...

    def head_position(self, recorder: Any) -> int:
        """The highest notification id stored (0 when there is none)."""
        raise NotImplementedError(f"{self.name}: positions are not ordered")

    def changed_after(self, recorder: Any, after: int,
                      ids: Collection[UUID]) -> dict[UUID, int]:
        """Of `ids`, those with events after notification id `after`: their highest
        version among those events."""
        raise NotImplementedError(f"{self.name}: positions are not ordered")

    def select_versions(self, recorder: AggregateRecorder, ids: Iterable[UUID]) -> dict[UUID, int]:
        """The current (highest) version of each id that has events.

        One index seek per id (a `max()` subquery each), not a `GROUP BY` that
        would read every version of every id: histories only grow.
        """
        found: dict[UUID, int] = {}
        for chunk in _chunks(ids):
            for originator, version in self._versions_chunk(recorder, chunk):
                if version is not None:
                    found[self._originator(recorder, originator)] = int(version)
        return found

    def _stored(self, recorder: Any, row: Any) -> StoredEvent:
        return StoredEvent(originator_id=self._originator(recorder, row["originator_id"]),
                           originator_version=int(row["originator_version"]),
                           topic=row["topic"], state=bytes(row["state"]))


def not_empty(events: int, where: str) -> EventStoreNotEmpty:
    return EventStoreNotEmpty(f"the event store {where} is not empty ({events} events): "
                              "import only into a new, empty store")


def snapshots_not_written(count: int) -> None:
    """A save's snapshots failed in their savepoint; its events still commit."""
    log.warning("could not write %d snapshots; loading replays their events", count,
                exc_info=True)


def _chunks(ids: Iterable[UUID]) -> Iterable[list[UUID]]:
    wanted = list(dict.fromkeys(ids))
    for start in range(0, len(wanted), CHUNK):
        yield wanted[start:start + CHUNK]


def unavailable(error: BaseException) -> bool:
    """Whether `error` says the event store cannot be reached right now (a server
    restart, a cut connection, an exhausted pool, a locked file): worth retrying later,
    unlike a refused command or a bug."""
    import eventsourcing.persistence as persistence

    transient = (persistence.OperationalError, persistence.InterfaceError,
                 persistence.ConnectionUnavailableError)
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, transient):
            return True
        module = type(current).__module__.split(".")[0]
        if module in ("psycopg", "psycopg_pool") and type(current).__name__ in _PSYCOPG_TRANSIENT:
            return True
        current = current.__cause__ or current.__context__
    return False


_PSYCOPG_TRANSIENT = frozenset({"OperationalError", "InterfaceError", "PoolTimeout",
                                "AdminShutdown", "ConnectionTimeout", "PoolClosed"})
