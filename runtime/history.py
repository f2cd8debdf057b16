"""An aggregate's history straight from the event store (every driver shows it)."""

from __future__ import annotations

from datetime import datetime
from typing import Any
from uuid import UUID

from domain.envelope import Envelope, from_stored
from domain.timeutil import parse_iso
from runtime.ledger import Ledger

__all__ = ["known_at", "stream_history"]


def stream_history(ledger: Ledger, stream_id: UUID) -> list[Envelope]:
    """A known stream's envelopes in version order (from the event store, not a model)."""
    rows = ledger.backend.stream_rows(ledger.app.recorder, stream_id)
    return [from_stored(*row) for row in rows]


def known_at(ledger: Ledger, aggregate: Any, at: datetime) -> tuple[Any, list[Envelope]] | None:
    """The aggregate and its history as the ledger knew them at `at` (recorded time);
    None when it was not yet recorded then."""
    known = [e for e in stream_history(ledger, aggregate.id)
             if parse_iso(e.recorded_at) <= at]  # type: ignore[operator]
    if not known:
        return None
    return ledger.app.repository.get(aggregate.id, version=known[-1].version), known
