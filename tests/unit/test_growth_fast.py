"""The growth benchmark's fast history generator writes the events the recording path
writes: the same fleet recorded both ways holds, stream by stream, the same events."""

from __future__ import annotations

import json
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
from backends import BACKENDS, settings_for, store_url

from projections.audit import verify

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from growth_fast import generate_history  # noqa: E402
from growth_history import FleetShape, record_history  # noqa: E402

from ledger.bootstrap import Ledger, bootstrap  # noqa: E402

#: a fleet small enough to record the slow way, moving fast enough to hold every kind of
#: change (price, listing, out of stock both ways, failures making stock unknown)
SHAPE = FleetShape(stores=3, products=40, failure_rate=0.3, price_change_rate=0.05,
                   delist_rate=0.05, relist_rate=0.5, sold_out_rate=0.05, restock_rate=0.4)
EVENTS = 1_500
#: fields that are the lease's (drawn from the seed by the fast generator, uuid4 when recorded)
LEASE_FIELDS = ("lease_id",)


def _streams(ledger: Ledger) -> dict[str, list[tuple[int, str, Any]]]:
    """Each stream's (version, topic, state) in order, leases and timestamps aside; the
    crawls' `Sightings` streams (named after their lease) keyed by job and time."""
    rows = ledger.backend.notification_rows(ledger.app.recorder, 0, 1_000_000)
    streams: dict[str, list[tuple[int, str, Any]]] = defaultdict(list)
    for _, originator, version, topic, state in rows:
        payload = json.loads(state)
        key = str(originator)
        if topic.endswith("Sightings.Recorded"):
            key = f"sightings {payload['job_id']} {payload['observed_at']}"
        for name in LEASE_FIELDS:
            payload.pop(name, None)
        streams[key].append((version, topic, payload))
    return streams


@pytest.mark.parametrize("backend", BACKENDS)
def test_fast_history_is_the_recorded_history(backend: str, tmp_path: Path) -> None:
    with store_url(backend, tmp_path / "slow") as slow_url, \
            store_url(backend, tmp_path / "fast") as fast_url:
        slow = bootstrap(settings_for(slow_url, tmp_path / "slow"))
        fast = bootstrap(settings_for(fast_url, tmp_path / "fast"))
        try:
            recorded = record_history(slow, EVENTS, SHAPE, seed=3)
            generated = generate_history(fast, recorded.events, SHAPE, seed=3)
            assert generated.events == recorded.events
            assert generated.crawls == recorded.crawls
            expected, written = _streams(slow), _streams(fast)
            kinds = {topic.rsplit(".", 1)[-1] for stream in written.values()
                     for _, topic, _ in stream}
            assert {"Missed", "WentOutOfStock", "BackInStock", "PriceChanged", "StockUnknown",
                    "StockKnown", "Recorded", "Failed"} <= kinds
            assert written.keys() == expected.keys()
            for key, events in expected.items():
                assert written[key] == events, key
            assert verify(fast.chain, fast.db).ok
        finally:
            slow.close()
            fast.close()
