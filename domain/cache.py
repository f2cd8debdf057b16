"""An in-process cache of aggregates the application wrote itself.

A command *takes* its aggregates out (`take_many`) and puts them back only
after a successful save, so a cached aggregate never has unsaved changes
and two concurrent commands never share one object; an older copy never
replaces a newer one. A copy that went stale because another process wrote
the stream is detected by the application before use
(`LedgerApplication.fresh_cached`).

Each copy may be put with the notification position it is known current
through (`as_of`: no event of its aggregate at or below that position is missing
from it). Where the backend's positions become visible in order (SQLite), the
application then checks a copy against the few events stored after that
position instead of querying its version; a copy put without one is checked
by its version.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable
from typing import Generic, TypeVar
from uuid import UUID

from eventsourcing.domain import Aggregate

A = TypeVar("A", bound=Aggregate)

#: a cached copy and the position it is known current through (None: unknown)
Entry = tuple[A, int | None]


class AggregateCache(Generic[A]):
    def __init__(self, maxsize: int = 100_000) -> None:
        self.maxsize = maxsize
        self._items: OrderedDict[UUID, Entry[A]] = OrderedDict()
        self._lock = threading.Lock()

    def take_many(self, ids: Iterable[UUID]) -> dict[UUID, A]:
        return {i: aggregate for i, (aggregate, _) in self.take_entries(ids).items()}

    def take_entries(self, ids: Iterable[UUID]) -> dict[UUID, Entry[A]]:
        """The cached copies of `ids`, taken out, each with its position (or None)."""
        with self._lock:
            return {i: self._items.pop(i) for i in ids if i in self._items}

    def put_many(self, aggregates: Iterable[A], as_of: int | None = None) -> None:
        """Keep `aggregates`, each known current through position `as_of` (None: unknown,
        checked by its version when taken)."""
        with self._lock:
            for aggregate in aggregates:
                held = self._items.get(aggregate.id)
                if held is not None and held[0].version > aggregate.version:
                    continue  # a concurrent command put back a newer copy
                self._items[aggregate.id] = (aggregate, as_of)
                self._items.move_to_end(aggregate.id)
            while len(self._items) > self.maxsize:
                self._items.popitem(last=False)
