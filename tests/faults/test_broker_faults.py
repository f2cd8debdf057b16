"""Broker faults under a running relay process: the broker killed and restarted."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import backends
import pytest
from fleet import wait_for
from invariants import check, no_duplicate_effects
from kafka_fixtures import (  # noqa: F401
    KAFKA_WARNINGS,
    free_port,
    pg_store_url,
    read_topics,
    require_tansu,
    seed_stores,
    start_tansu,
    stop_process,
    wait_for_port,
)

from ledger.bootstrap import Ledger
from runtime.tables import RelayPositionTable
from streams.topics import PUBLIC_TOPICS

pytestmark = [pytest.mark.postgres, pytest.mark.kafka, KAFKA_WARNINGS, pytest.mark.timeout(240)]


@pytest.fixture
def ledger(pg_store_url: str, tmp_path: Path) -> Iterator[Ledger]:  # noqa: F811
    with backends.open_ledger(pg_store_url, tmp_path) as opened:
        yield opened


def test_the_relay_process_survives_a_broker_restart(ledger: Ledger, pg_store_url: str,  # noqa: F811
                                                    tmp_path: Path) -> None:
    """Kill the broker under a running `crawl-ledger relay`, record more events, start the
    broker again: the relay builds a new producer and publishes everything from its last
    acknowledged position (the in-memory broker forgot what came before; what came after
    is all there) without exiting."""
    binary, port = require_tansu(), free_port()
    servers = [f"127.0.0.1:{port}"]
    positions = ledger.tables.relay_positions()
    broker = start_tansu(binary, port, tmp_path / "tansu.log")
    env = {k: v for k, v in os.environ.items() if not k.startswith("LEDGER_")} | {
        "LEDGER_STORE": pg_store_url, "LEDGER_BROKER": f"kafka://{servers[0]}",
        "LEDGER_DATA_DIR": str(tmp_path / "data")}
    log = (tmp_path / "relay.log").open("w")
    relay = None
    try:
        wait_for_port(port)
        seed_stores(ledger.app, 20, changes=1)
        relay = subprocess.Popen([CLI, "relay", "--quiet", "--partitions", "2"], env=env,
                                 stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        wait_for(lambda: _position(positions) == ledger.source.head(), "the first events published")
        stop_process(broker)
        before = _position(positions)
        seed_stores(ledger.app, 15, changes=1, start=20)  # recorded while the broker is away
        after = ledger.source.head()
        broker = start_tansu(binary, port, tmp_path / "tansu.log")
        wait_for_port(port)
        wait_for(lambda: _position(positions) == after, "the events recorded meanwhile published",
                 120)
        assert relay.poll() is None, (tmp_path / "relay.log").read_text()
        wanted = {e.event_id for e in ledger.source.read(before, 10_000)}
        published = {env.event_id for _, _, env in read_topics(servers, PUBLIC_TOPICS, len(wanted))}
        check("broker restart under the relay", {
            "no_loss": lambda: None if wanted <= published and positions.load().gaps == 0
            else f"{len(wanted - published)} events recorded meanwhile never published",
            "no_duplicate_effects": lambda: no_duplicate_effects(ledger.source.read(0, 10_000)),
        })
    finally:
        if relay is not None:
            relay.terminate()
            relay.wait(30)
        log.close()
        stop_process(broker)


def _position(positions: RelayPositionTable) -> int:
    return positions.load().position


CLI = str(Path(sys.executable).with_name("crawl-ledger"))
