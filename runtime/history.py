"""An aggregate's history straight from the event store (every driver shows it)."""

from __future__ import annotations

from datetime import datetime
from typing import Any
from uuid import UUID

from domain.envelope import Envelope, from_stored_rows
from domain.timeutil import parse_iso
from runtime.ledger import Ledger

__all__ = ["known_at", "stream_history"]


def stream_history(ledger: Ledger, stream_id: UUID, after: int = 0,
                   last: int | None = None) -> list[Envelope]:
    """A known stream's envelopes in version order (from the event store, not a model):
    those after position `after`, and of them only the newest `last` (None: all; a
    bounded read costs the same however long the stream is)."""
    rows = ledger.backend.stream_rows(ledger.app.recorder, stream_id, after, last)
    return from_stored_rows(rows, ledger.backend.canonical_ids)


def known_at(ledger: Ledger, aggregate: Any, at: datetime) -> tuple[Any, list[Envelope]] | None:
    """The aggregate and its history as the ledger knew them at `at` (recorded time);
    None when it was not yet recorded then."""
    known = [e for e in stream_history(ledger, aggregate.id)
             if parse_iso(e.recorded_at) <= at]  # type: ignore[operator]
    if not known:
        return None
    return ledger.app.repository.get(aggregate.id, version=known[-1].version), known
