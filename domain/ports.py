"""The storage port: what the command side needs of an event-store backend.

`eventstore/` has one adapter per backend (SQLite, PostgreSQL); the
composition root picks one by configuration and hands it to `CrawlLedger`.
The domain names no storage engine.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from typing import Any, Protocol
from uuid import UUID

from eventsourcing.persistence import AggregateRecorder, EventStore, StoredEvent

__all__ = ["Storage"]


class Storage(Protocol):
    """An event-store backend, in the style of the library's recorder classes."""

    #: "sqlite" or "postgresql"
    name: str

    def library_env(self) -> dict[str, str]:
        """The eventsourcing library's settings that open this backend. Its application
        recorder's `insert_events` takes `snapshots=(snapshot recorder, stored snapshots)`
        and writes them in the events' transaction; snapshots that cannot be written are
        only logged and the events still commit."""
        ...

    def snapshot_store(self, app: Any) -> EventStore[UUID] | None:
        """The aggregate-snapshot store for `app`; None for the library's default."""
        ...

    def select_after(self, recorder: AggregateRecorder, ids: Iterable[UUID],
                     after: Mapping[UUID, int] | None = None) -> dict[UUID, list[StoredEvent]]:
        """Each id's stored events after version `after[id]` (all when absent), in order."""
        ...

    def select_latest(self, recorder: AggregateRecorder,
                      ids: Iterable[UUID]) -> dict[UUID, StoredEvent]:
        """The highest-version record of each id (read on the snapshot table)."""
        ...

    def select_versions(self, recorder: AggregateRecorder, ids: Iterable[UUID]) -> dict[UUID, int]:
        """The current version of each id that has events."""
        ...

    #: whether notification ids become visible in their order (a reader that sees one
    #: sees every lower one that will ever be committed); `head_position` and
    #: `changed_after` are only called where they do
    ordered_positions: bool

    def head_position(self, recorder: Any) -> int:
        """The highest notification id stored (0 when there is none)."""
        ...

    def changed_after(self, recorder: Any, after: int,
                      ids: Collection[UUID]) -> dict[UUID, int]:
        """Of `ids`, those with events after notification id `after`: their highest
        version among those events."""
        ...
