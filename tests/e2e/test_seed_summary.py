"""The same simulator seed records the same history: event types and counts are pinned.

`tests/fixtures/seed_summary.json` was recorded from the code before the
runtime/eventstore restructure (the same demo configuration below), with the
deliberate changes its "about" names; any other change to what the system
records for a given seed shows up here. Every
event is stamped by the demo's simulated clock, never the wall clock.
"""

from __future__ import annotations

import json
from collections import Counter
from datetime import timedelta
from pathlib import Path

from backends import LOOPBACK_ENV

from domain.timeutil import parse_iso
from ledger.drivers.demo import DEMO_START, DemoConfig, run_embedded_demo
from ledger.settings import Settings

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "seed_summary.json"


def test_a_seed_records_the_pinned_event_types_and_counts(tmp_path: Path) -> None:
    config = DemoConfig(stores=3, cycles=3, seed=11, fault_rate=0.3)
    # the demo's own crawl delay (as `crawl-ledger demo` sets it): the simulator is ours
    settings = Settings.from_env({**LOOPBACK_ENV, "LEDGER_DATA_DIR": str(tmp_path),
                                  "LEDGER_DEFAULT_CRAWL_DELAY": str(config.crawl_delay)})
    ledger = run_embedded_demo(settings, config)
    try:
        envelopes = ledger.source.read(0, 1_000_000)
    finally:
        ledger.close()
    counts = dict(sorted(Counter(e.event_type for e in envelopes).items()))
    assert counts == json.loads(FIXTURE.read_text())["event_counts"]
    end = DEMO_START + timedelta(seconds=config.cycles * config.cycle_seconds)
    stamps = [parse_iso(e.recorded_at) for e in envelopes]
    assert all(s is not None and DEMO_START <= s <= end for s in stamps), \
        "an event carries a time outside the demo's simulated clock"
