"""Stored aggregate snapshots checked against the event log they summarise.

A snapshot is derived data that loading trusts: it replaces replaying an
aggregate's events up to its version. `check_snapshots` replays, for every
aggregate with a snapshot, its events up to that version and compares the state
with the snapshot's; a snapshot that differs (edited, forged, or written by a
buggy version) is reported and deleted, so the next load replays the events and
the next save takes a fresh snapshot. `audit verify` runs it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any
from uuid import UUID

from runtime.ledger import Ledger

__all__ = ["check_snapshots"]

#: attributes that are not state (the library keeps pending events on the object)
_NOT_STATE = {"_pending_events"}


def check_snapshots(ledger: Ledger, ids: Iterable[UUID]) -> list[str]:
    """One line per snapshot of `ids` that differs from a replay; those are deleted."""
    app = ledger.app
    store = getattr(app, "snapshots", None)
    if store is None:
        return []
    recorder = store.recorder
    snapshots = ledger.backend.select_latest(recorder, ids)
    bad: dict[UUID, str] = {}
    for aggregate_id, stored in snapshots.items():
        try:
            event: Any = app.mapper.to_domain_event(stored)
            snapshot = event.mutate(None)
        except Exception as error:  # noqa: BLE001 - an unreadable snapshot is a bad one
            bad[aggregate_id] = f"unreadable ({type(error).__name__})"
            continue
        replayed = _replay(app, aggregate_id, stored.originator_version)
        if replayed is None:
            bad[aggregate_id] = f"no events up to version {stored.originator_version}"
        elif _state(snapshot) != _state(replayed):
            fields = sorted(k for k in _state(snapshot).keys() | _state(replayed).keys()
                            if _state(snapshot).get(k) != _state(replayed).get(k))
            bad[aggregate_id] = f"differs from its events in {', '.join(fields)}"
    if bad:
        ledger.backend.delete_records(recorder, bad)
    return [f"snapshot of {aggregate_id} at version {snapshots[aggregate_id].originator_version}:"
            f" {why}; deleted (loads replay the events)" for aggregate_id, why in bad.items()]


def _replay(app: Any, aggregate_id: UUID, version: int) -> Any:
    aggregate = None
    for stored in app.recorder.select_events(aggregate_id, lte=version):
        event: Any = app.mapper.to_domain_event(stored)
        aggregate = event.mutate(aggregate)
    return aggregate


def _state(aggregate: Any) -> dict[str, Any]:
    return {k: v for k, v in vars(aggregate).items() if k not in _NOT_STATE}
