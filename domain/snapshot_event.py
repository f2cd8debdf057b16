"""The snapshot class of the ledger's aggregates (see `domain.snapshots`)."""

from __future__ import annotations

from typing import Any

from eventsourcing.domain import Snapshot


class LedgerSnapshot(Snapshot):
    """The library's snapshot, turning the aggregate's `TUPLE_FIELDS` back into tuples
    (JSON has only lists)."""

    def mutate(self, _: None) -> Any:
        aggregate = super().mutate(_)
        for name in getattr(type(aggregate), "TUPLE_FIELDS", ()):
            setattr(aggregate, name, tuple(getattr(aggregate, name)))
        return aggregate
