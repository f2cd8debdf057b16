"""The projector beside `serve` (runtime/projector.py), on both backends."""

from __future__ import annotations

from datetime import UTC, datetime

from ledger.bootstrap import Ledger
from runtime.projector import Projector

T0 = datetime(2026, 3, 1, 8, 0, tzinfo=UTC)


def _store(ledger: Ledger, name: str) -> str:
    return str(ledger.app.register_store(name=name, base_url=f"https://{name}.example",
                                         platform="shopify", now=T0))


def test_a_stopped_projector_does_not_wait_and_does_not_project(ledger: Ledger) -> None:
    _store(ledger, "one")
    projector = Projector(ledger)
    head = ledger.source.head()
    assert projector.wait_past(head, timeout=30) is False  # at once: nothing would project
    assert ledger.projection_position() < head


def test_a_woken_projector_applies_what_was_recorded(ledger: Ledger) -> None:
    _store(ledger, "one")
    projector = Projector(ledger, every=3600)  # a pass at start, then only when woken
    projector.start()
    try:
        assert ledger.projection_position() == ledger.source.head()  # current at start
        store = _store(ledger, "two")
        assert projector.wait_past(ledger.source.head(), timeout=30)
        assert ledger.projection_position() == ledger.source.head()
        assert store in {s["store_id"] for s in ledger.read.stores()}
    finally:
        projector.stop()
    assert not projector.running
