"""docs/consumer_example.py against real topics: price history and drops, each event once."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from backends import LOOPBACK_ENV
from kafka_fixtures import KAFKA_WARNINGS, pg_store_url, read_topics, tansu_broker  # noqa: F401

from ledger.drivers.demo import DemoConfig, run_embedded_demo
from ledger.settings import Settings
from streams.relay import Relay, kafka_producer
from streams.topics import PRODUCTS, ensure_topics

pytestmark = [pytest.mark.postgres, pytest.mark.kafka, KAFKA_WARNINGS, pytest.mark.timeout(180)]
EXAMPLE = Path(__file__).resolve().parents[2] / "docs" / "consumer_example.py"


def load_example() -> ModuleType:
    spec = importlib.util.spec_from_file_location("consumer_example", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def published(pg_store_url: str, tansu_broker: str, tmp_path: Path) -> Iterator[list[Any]]:  # noqa: F811
    settings = Settings.from_env({**LOOPBACK_ENV, "LEDGER_STORE": pg_store_url, "LEDGER_DATA_DIR": str(tmp_path),
                                  "LEDGER_BROKER": f"kafka://{tansu_broker}",
                                  "LEDGER_DEFAULT_CRAWL_DELAY": "0.01"})
    ledger = run_embedded_demo(settings, DemoConfig(stores=2, cycles=4, seed=3, fault_rate=0.0))
    try:
        ensure_topics(settings.broker_servers, 4)
        relay = Relay(ledger.source, ledger.tables.relay_positions(),
                      kafka_producer(settings.broker_servers))
        relay.catch_up()
        relay.producer.close()
        yield ledger.source.read(0, 1_000_000)
    finally:
        ledger.close()


def history(envelopes: list[dict[str, Any]]) -> dict[tuple[str, str], list[tuple[Any, ...]]]:
    out: dict[tuple[str, str], list[tuple[Any, ...]]] = defaultdict(list)
    for env in envelopes:
        if env["event_type"] == "Product.PriceChanged":
            p = env["payload"]
            out[(env["stream_id"], p["option"])].append(
                (p["old"], p["new"], p["old_special"], p["new_special"]))
    return out


def test_consumer_reconstructs_price_history_and_prints_drops(published: list[Any],
                                                              tansu_broker: str) -> None:  # noqa: F811
    example = load_example()
    stored = [e.to_dict() for e in published]
    messages = [env.to_dict() for _, _, env in
                read_topics([tansu_broker], [PRODUCTS], sum(e["stream_type"] == "Product"
                                                             for e in stored))]
    # per product, the topic tells the same price history as the event store, in order
    assert history(messages) == history(stored)
    assert any(len(changes) > 1 for changes in history(messages).values())
    expected = list(example.price_drops(stored))
    # at-least-once: a redelivered copy of every message changes nothing
    # (partitions interleave differently from the store's global order: compare as sets)
    drops = [e["event_id"] for e, _ in example.price_drops(messages + messages)]
    assert len(drops) == len(set(drops)) and set(drops) == {e["event_id"] for e, _ in expected}
    assert expected, "the simulated catalogs should contain price drops"

    run = subprocess.run(
        [sys.executable, str(EXAMPLE), "--bootstrap", tansu_broker, "--from-beginning",
         "--exit-when-idle", "4000"], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert len(lines) == len(expected)
    for env, product in expected:
        old, new = example.effective_prices(env["payload"])
        wanted = f"{env['occurred_at']}  {product}  {env['payload']['option']}: {old} -> {new}"
        assert any(line.startswith(wanted) for line in lines), wanted
