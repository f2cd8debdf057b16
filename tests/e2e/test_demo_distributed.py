"""`crawl-ledger demo --store postgresql://… --broker kafka://…` as a user runs it.

The workers stop before the relay, and the relay publishes everything they
recorded (their `Worker.Departed` too) before it stops: when the command has
exited, every stored event is on the topics, once.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from kafka_fixtures import KAFKA_WARNINGS, pg_store_url, read_topics, tansu_broker  # noqa: F401

from ledger.bootstrap import bootstrap
from ledger.settings import Settings
from streams.topics import PUBLIC_TOPICS

pytestmark = [pytest.mark.postgres, pytest.mark.kafka, KAFKA_WARNINGS, pytest.mark.timeout(240)]


def test_every_stored_event_reaches_the_topics_when_the_demo_ends(
        tmp_path: Path, crawl_ledger_bin: str, cli_env: Callable[..., dict[str, str]],
        pg_store_url: str, tansu_broker: str) -> None:  # noqa: F811
    env = cli_env(tmp_path)
    done = subprocess.run(
        [crawl_ledger_bin, "demo", "--stores", "1", "--cycles", "1", "--fault-rate", "0",
         "--store", pg_store_url, "--broker", f"kafka://{tansu_broker}"],
        env=env, capture_output=True, text=True, timeout=200, stdin=subprocess.DEVNULL,
        check=False)
    assert done.returncode == 0, done.stdout + done.stderr

    settings = Settings.from_env({**env, "LEDGER_STORE": pg_store_url,
                                  "LEDGER_BROKER": f"kafka://{tansu_broker}",
                                  "LEDGER_DATA_DIR": str(tmp_path / "demo")})
    ledger = bootstrap(settings)
    try:
        stored = ledger.source.read(0, 1_000_000)
    finally:
        ledger.close()
    departed = [e for e in stored if e.event_type == "Worker.Departed"]
    assert len(departed) >= 2, [e.event_type for e in stored if e.stream_type == "Worker"]

    published = read_topics(settings.broker_servers, PUBLIC_TOPICS, len(stored), timeout=15)
    assert len(published) == len(stored), (len(published), len(stored))
    assert sorted(env.event_id for _, _, env in published) == sorted(e.event_id for e in stored)
