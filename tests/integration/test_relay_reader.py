"""The relay reading ahead in a child process (`streams.relay_reader.ProcessReader`),
against a real Tansu broker and a real PostgreSQL event store: what it publishes, a
child that dies or cannot start, and the `crawl-ledger relay` command's child."""

from __future__ import annotations

import logging
import math
import os
import signal
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from functools import partial
from pathlib import Path

import backends
import pytest
from fleet import wait_for
from kafka_fixtures import (  # noqa: F401
    KAFKA_WARNINGS,
    free_port,
    pg_store_url,
    read_topics,
    seed_stores,
    tansu_broker,
)

from domain.envelope import Envelope
from ledger.bootstrap import Ledger, event_source
from projections.source import EventSource
from streams.relay import ProcessReader, Relay, kafka_producer
from streams.topics import PUBLIC_TOPICS, ensure_topics

pytestmark = [pytest.mark.postgres, pytest.mark.kafka, KAFKA_WARNINGS]

CLI = str(Path(sys.executable).with_name("crawl-ledger"))


@pytest.fixture
def ledger(pg_store_url: str, tmp_path: Path) -> Iterator[Ledger]:  # noqa: F811
    with backends.open_ledger(pg_store_url, tmp_path) as opened:
        yield opened


def reader_for(url: str, tmp_path: Path) -> ProcessReader:
    return ProcessReader(partial(event_source, backends.settings_for(url, tmp_path)))


def relay_with(ledger: Ledger, servers: list[str], reader: ProcessReader,
               batch_size: int, source: EventSource | None = None) -> Relay:
    return Relay(source or ledger.source, ledger.tables.relay_positions(),
                 kafka_producer(servers), batch_size=batch_size, ledger_id=ledger.identity,
                 reader=reader)


class CountedReads:
    """The relay's own source, counting the batches the relay reads itself."""

    def __init__(self, source: EventSource) -> None:
        self.source, self.reads = source, 0

    def read(self, after: int, limit: int) -> list[Envelope]:
        self.reads += 1
        return self.source.read(after, limit)

    def head(self) -> int:
        return self.source.head()


def test_batches_read_by_the_child_are_published_once_each_as_the_store_holds_them(
        ledger: Ledger, tansu_broker: str, pg_store_url: str,  # noqa: F811
        tmp_path: Path) -> None:
    servers = [tansu_broker]
    ensure_topics(servers, 3)
    total = seed_stores(ledger.app, 240, changes=4)  # 1,200 events: 12 batches of 100
    with reader_for(pg_store_url, tmp_path) as reader:
        assert reader.wait_ready()
        own = CountedReads(ledger.source)
        relay = relay_with(ledger, servers, reader, 100, own)
        assert relay.catch_up() == total
        relay.producer.close()
        assert reader.answered == math.ceil(total / 100) - 1  # all but the first batch
        assert own.reads == 1  # every batch the child read was published as it was
    published = read_topics(servers, PUBLIC_TOPICS, total)
    stored = {env.event_id: env for env in ledger.source.read(0, total)}
    assert Counter(env.event_id for _, _, env in published) == Counter(list(stored))  # once each
    for _, key, env in published:
        assert key == env.stream_id.encode()
        assert env.to_dict() == stored[env.event_id].to_dict() | {"ledger_id": ledger.identity}


def test_a_killed_child_leaves_the_relay_reading_alone_without_a_loss(
        ledger: Ledger, tansu_broker: str, pg_store_url: str,  # noqa: F811
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    servers = [tansu_broker]
    ensure_topics(servers, 2)
    total = seed_stores(ledger.app, 120, changes=4)  # 600 events
    with reader_for(pg_store_url, tmp_path) as reader:
        assert reader.wait_ready() and reader.pid is not None
        relay = relay_with(ledger, servers, reader, 100)
        os.kill(reader.pid, signal.SIGKILL)
        with caplog.at_level(logging.WARNING, logger="streams.relay"):
            assert relay.step() == 100  # full: the (dead) child is asked for 101..200
            assert relay.catch_up() == total - 100
        relay.producer.close()
        assert not reader.working and reader.answered == 0
    assert "reader process is gone" in caplog.text
    published = Counter(env.position for _, _, env in read_topics(servers, PUBLIC_TOPICS, total))
    assert published == Counter(range(1, total + 1))


def test_a_child_that_cannot_open_the_store_says_why_once_without_the_password(
        ledger: Ledger, tansu_broker: str, tmp_path: Path,  # noqa: F811
        caplog: pytest.LogCaptureFixture) -> None:
    servers = [tansu_broker]
    ensure_topics(servers, 2)
    total = seed_stores(ledger.app, 60, changes=4)  # 300 events
    closed = f"postgresql://crawler:s3cret-pw@127.0.0.1:{free_port()}/ledger"
    with caplog.at_level(logging.WARNING, logger="streams.relay"), \
            reader_for(closed, tmp_path) as reader:
        assert not reader.wait_ready()
        relay = relay_with(ledger, servers, reader, 100)
        assert relay.catch_up() == total  # read ahead in a thread instead
        relay.producer.close()
    warnings = [r.getMessage() for r in caplog.records]
    assert len(warnings) == 1 and "cannot open the event store" in warnings[0]
    assert "s3cret-pw" not in caplog.text
    assert len(read_topics(servers, PUBLIC_TOPICS, total)) == total


def test_the_relay_command_stops_its_reader_process(
        ledger: Ledger, pg_store_url: str, tansu_broker: str,  # noqa: F811
        tmp_path: Path) -> None:
    """`crawl-ledger relay` runs a reader process; SIGTERM stops both, none is left."""
    seed_stores(ledger.app, 600, changes=4)  # 3,000 events: a backlog of full batches
    positions = ledger.tables.relay_positions()
    env = {k: v for k, v in os.environ.items() if not k.startswith("LEDGER_")} | {
        "LEDGER_STORE": pg_store_url, "LEDGER_BROKER": f"kafka://{tansu_broker}",
        "LEDGER_DATA_DIR": str(tmp_path / "data")}
    with open(tmp_path / "relay.log", "w") as log:
        relay = subprocess.Popen([CLI, "relay", "--quiet", "--batch-size", "500"], env=env,
                                 stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        try:
            children = _wait_for_children(relay.pid)
            wait_for(lambda: positions.load().position == ledger.source.head(),
                     "the backlog published")
        finally:
            relay.send_signal(signal.SIGTERM)
            code = relay.wait(30)
    assert code == 0, (tmp_path / "relay.log").read_text()
    wait_for(lambda: not [pid for pid in children if Path(f"/proc/{pid}").exists()],
             "the relay's child processes gone")


def _children(pid: int) -> list[int]:
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:  # gone meanwhile
            continue
        if int(fields[1]) == pid:
            found.append(int(stat.parent.name))
    return found


def _wait_for_children(pid: int) -> list[int]:
    return wait_for(lambda: _children(pid), "the relay's reader process started")  # type: ignore[no-any-return]
