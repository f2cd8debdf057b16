"""An aggregate's history straight from the event store (every driver shows it)."""

from __future__ import annotations

from uuid import UUID

from domain.envelope import Envelope, from_stored
from runtime.ledger import Ledger

__all__ = ["stream_history"]


def stream_history(ledger: Ledger, stream_id: UUID) -> list[Envelope]:
    """A known stream's envelopes in version order (from the event store, not a model)."""
    events = ledger.app.recorder.select_events(stream_id)
    return [from_stored(0, e.originator_id, e.originator_version, e.topic, e.state)
            for e in events]
