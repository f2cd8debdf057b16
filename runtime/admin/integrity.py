"""Stored aggregate snapshots checked against the event log they summarise.

A snapshot is derived data that loading trusts: it replaces replaying an
aggregate's events up to its version. `check_snapshots` replays, for every
aggregate in the snapshots table, its events once, and compares the state at
each of its snapshots' versions (old ones too, not only the latest) with the
snapshot's: one that differs (edited, forged, or written by a buggy version), does
not decode, or has no events up to its version is reported. It only reads;
`drop_snapshots` (what `audit repair` runs, once the log itself verifies) deletes
the snapshots of those aggregates, so loads replay their events and the next save
takes a fresh snapshot.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from runtime.ledger import Ledger

__all__ = ["BadSnapshot", "check_snapshots", "drop_snapshots"]

#: attributes that are not state (the library keeps pending events on the object)
_NOT_STATE = {"_pending_events"}


@dataclass(frozen=True)
class BadSnapshot:
    aggregate_id: UUID
    version: int
    why: str

    def describe(self) -> str:
        return f"snapshot of {self.aggregate_id} at version {self.version}: {self.why}"


def check_snapshots(ledger: Ledger) -> list[BadSnapshot]:
    """Every stored snapshot that is not the state its events give at its version."""
    store = getattr(ledger.app, "snapshots", None)
    if store is None:
        return []
    recorder = store.recorder
    bad: list[BadSnapshot] = []
    for aggregate_id in sorted(ledger.backend.originator_ids(recorder)):
        bad += _check_aggregate(ledger.app, aggregate_id, recorder.select_events(aggregate_id))
    return bad


def drop_snapshots(ledger: Ledger, bad: Iterable[BadSnapshot]) -> int:
    """Delete every snapshot of the aggregates in `bad` (derived data: loads replay the
    events); the number of aggregates."""
    ids = {snapshot.aggregate_id for snapshot in bad}
    store = ledger.app.snapshots
    if ids and store is not None:
        ledger.backend.delete_records(store.recorder, ids)
    return len(ids)


def _check_aggregate(app: Any, aggregate_id: UUID, snapshots: Iterable[Any]) -> list[BadSnapshot]:
    due = sorted(snapshots, key=lambda s: s.originator_version)
    if not due:
        return []
    bad: list[BadSnapshot] = []
    events = iter(app.recorder.select_events(aggregate_id, lte=due[-1].originator_version))
    aggregate, version = None, 0
    for stored in due:
        try:
            while version < stored.originator_version:
                event: Any = app.mapper.to_domain_event(next(events))
                aggregate, version = event.mutate(aggregate), event.originator_version
        except StopIteration:
            aggregate = None
        except Exception as error:  # noqa: BLE001 - an event that no longer replays
            return bad + [_bad(s, f"its events do not replay ({type(error).__name__})")
                          for s in due if s.originator_version >= stored.originator_version]
        if (why := _differs(app, stored, aggregate, version)) is not None:
            bad.append(_bad(stored, why))
    return bad


def _differs(app: Any, stored: Any, replayed: Any, version: int) -> str | None:
    if replayed is None or version != stored.originator_version:
        return f"no events up to version {stored.originator_version}"
    try:
        snapshot: Any = app.mapper.to_domain_event(stored).mutate(None)
    except Exception as error:  # noqa: BLE001 - an unreadable snapshot is a bad one
        return f"unreadable ({type(error).__name__})"
    mine, theirs = _state(snapshot), _state(replayed)
    fields = sorted(k for k in mine.keys() | theirs.keys() if mine.get(k) != theirs.get(k))
    return f"differs from its events in {', '.join(fields)}" if fields else None


def _bad(stored: Any, why: str) -> BadSnapshot:
    return BadSnapshot(stored.originator_id, stored.originator_version, why)


def _state(aggregate: Any) -> dict[str, Any]:
    return {k: v for k, v in vars(aggregate).items() if k not in _NOT_STATE}
