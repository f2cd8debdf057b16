"""An in-process cache of aggregates the application wrote itself.

A command *takes* its aggregates out (`take_many`) and puts them back only
after a successful save, so a cached aggregate never has unsaved changes
and two concurrent commands never share one object; an older copy never
replaces a newer one. A copy that went stale because another process wrote
the stream is detected by the application before use (one version query).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable
from typing import Generic, TypeVar
from uuid import UUID

from eventsourcing.domain import Aggregate

A = TypeVar("A", bound=Aggregate)


class AggregateCache(Generic[A]):
    def __init__(self, maxsize: int = 100_000) -> None:
        self.maxsize = maxsize
        self._items: OrderedDict[UUID, A] = OrderedDict()
        self._lock = threading.Lock()

    def take_many(self, ids: Iterable[UUID]) -> dict[UUID, A]:
        with self._lock:
            return {i: self._items.pop(i) for i in ids if i in self._items}

    def put_many(self, aggregates: Iterable[A]) -> None:
        with self._lock:
            for aggregate in aggregates:
                held = self._items.get(aggregate.id)
                if held is not None and held.version > aggregate.version:
                    continue  # a concurrent command put back a newer copy
                self._items[aggregate.id] = aggregate
                self._items.move_to_end(aggregate.id)
            while len(self._items) > self.maxsize:
                self._items.popitem(last=False)
