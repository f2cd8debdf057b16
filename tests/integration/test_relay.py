"""The relay against a real Tansu broker and a real PostgreSQL event store."""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections import defaultdict
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from functools import partial
from pathlib import Path

import backends
import pytest
from kafka_fixtures import (  # noqa: F401
    KAFKA_WARNINGS,
    free_port,
    pg_store_url,
    read_topics,
    require_tansu,
    seed_stores,
    start_tansu,
    stop_process,
    tansu_broker,
    wait_for_port,
)
from seeded_history import T0, record_seeded_history

from domain.sightings import expand
from domain.values import CrawlSuccess, Observation, Offer
from eventstore.listen import NotifyWakeup
from eventstore.side_tables.relay_positions import RelayPositions
from ledger.bootstrap import Ledger, event_source, wakeup_for
from ledger.settings import parse_postgres
from streams.relay import ProcessReader, Relay, kafka_producer
from streams.topics import PRODUCTS, PUBLIC_TOPICS, STORES, ensure_topics

pytestmark = [pytest.mark.postgres, pytest.mark.kafka, KAFKA_WARNINGS]


@pytest.fixture
def ledger(pg_store_url: str, tmp_path: Path) -> Iterator[Ledger]:  # noqa: F811
    with backends.open_ledger(pg_store_url, tmp_path) as opened:
        yield opened


def make_relay(ledger: Ledger, servers: list[str], **kwargs: object) -> Relay:
    return Relay(ledger.source, ledger.tables.relay_positions(), kafka_producer(servers),
                 **kwargs)  # type: ignore[arg-type]


@pytest.fixture(params=["thread", "process"])
def reader(request: pytest.FixtureRequest, ledger: Ledger, pg_store_url: str,  # noqa: F811
           tmp_path: Path) -> Iterator[ProcessReader | None]:
    """How the relay reads ahead: in a thread (no reader) or in a child process, as
    `crawl-ledger relay` does."""
    if request.param == "thread":
        yield None
        return
    with ProcessReader(partial(event_source,
                               backends.settings_for(pg_store_url, tmp_path))) as process:
        assert process.wait_ready()
        yield process


def test_every_event_once_in_version_order_per_key(ledger: Ledger, tansu_broker: str) -> None:  # noqa: F811
    servers = [tansu_broker]
    ensure_topics(servers, 4)
    total = seed_stores(ledger.app, 300, changes=4)
    relay = make_relay(ledger, servers, batch_size=500)
    started = time.perf_counter()
    assert relay.catch_up() == total
    elapsed = time.perf_counter() - started
    relay.producer.close()
    print(f"relay: {total} events in {elapsed:.2f}s = {total / elapsed:,.0f} events/s")

    messages = read_topics(servers, PUBLIC_TOPICS, total)
    ids = [env.event_id for _, _, env in messages]
    assert len(ids) == total and len(set(ids)) == total
    versions: dict[str, list[int]] = defaultdict(list)
    for topic, key, env in messages:
        assert topic == STORES and key.decode() == env.stream_id
        versions[env.stream_id].append(env.version)
    assert all(v == sorted(v) for v in versions.values())
    assert relay.metrics().as_dict() | {"published": 0} == {
        "position": total, "head": total, "lag": 0, "gaps_seen": 0, "published": 0,
        "pending_gap": None}


class SentPartitions:
    """The relay's producer, keeping each message's topic, key and acknowledged partition."""

    def __init__(self, inner: object) -> None:
        self.inner = inner
        self.sent: list[tuple[str, bytes, object]] = []

    def send(self, topic: str, value: bytes, key: bytes, partition: int | None = None) -> object:
        future = self.inner.send(topic, value=value, key=key,  # type: ignore[attr-defined]
                                 partition=partition)
        self.sent.append((topic, key, future))
        return future

    def partitions_for(self, topic: str) -> set[int]:
        return self.inner.partitions_for(topic)  # type: ignore[attr-defined, no-any-return]

    def flush(self, timeout: float | None = None) -> None:
        self.inner.flush(timeout)  # type: ignore[attr-defined]

    def close(self, timeout: float | None = None) -> None:
        self.inner.close(timeout)  # type: ignore[attr-defined]


def test_each_stream_lands_where_kafka_pythons_default_partitioner_puts_it(
        ledger: Ledger, tansu_broker: str) -> None:  # noqa: F811
    """The relay names each message's partition itself; it must be the one a bare
    producer's default partitioner picks for the key, so a stream keeps one partition
    whichever producer wrote it."""
    from kafka.partitioner.default import DefaultPartitioner

    class Cluster:  # what the partitioner asks of the producer's metadata
        def topics(self) -> set[str]:
            return {STORES}

        def partitions_for_topic(self, _topic: str) -> set[int]:
            return {0, 1, 2, 3}

        available_partitions_for_topic = partitions_for_topic

    servers = [tansu_broker]
    ensure_topics(servers, 4)
    seed_stores(ledger.app, 60, changes=2)
    producer = SentPartitions(kafka_producer(servers))
    relay = Relay(ledger.source, ledger.tables.relay_positions(), producer,
                  batch_size=50)
    relay.catch_up()
    producer.close()
    partitioner = DefaultPartitioner()
    acknowledged = {(topic, key, future.value.partition)  # type: ignore[attr-defined]
                    for topic, key, future in producer.sent}
    assert len({p for _, _, p in acknowledged}) == 4  # the keys spread over every partition
    assert acknowledged == {(topic, key, partitioner.partition(topic, key, key, None, None, Cluster()))
                            for topic, key, _ in acknowledged}


class CrashAfterPublish(RelayPositions):
    """Fails to save the position once: the batch is in Kafka, the position is not."""

    crashed = False

    def save(self, position: int, gaps: list[int], recorded_at: str,
             offsets: dict[tuple[str, int], int] | None = None) -> None:
        if not self.crashed:
            self.crashed = True
            raise ConnectionError("simulated crash before the position was stored")
        super().save(position, gaps, recorded_at, offsets)


def test_restart_resumes_from_stored_position_without_loss(ledger: Ledger,
                                                          tansu_broker: str) -> None:  # noqa: F811
    servers = [tansu_broker]
    ensure_topics(servers, 2)
    total = seed_stores(ledger.app, 100, changes=4)
    first = make_relay(ledger, servers, batch_size=100)
    assert first.step() == 100 and first.step() == 100
    first.producer.close()

    crashing = Relay(ledger.source, CrashAfterPublish(ledger.db), kafka_producer(servers),
                     batch_size=100)
    assert crashing.position == 200  # resumed from the stored position
    with pytest.raises(ConnectionError):
        crashing.step()  # published 201..300, position not stored
    crashing.producer.close()

    restarted = make_relay(ledger, servers, batch_size=100)
    assert restarted.position == 200
    restarted.catch_up()
    restarted.producer.close()
    messages = read_topics(servers, PUBLIC_TOPICS, total + 100)
    counts: dict[str, int] = defaultdict(int)
    for _, _, env in messages:
        counts[env.event_id] += 1
    assert len(counts) == total  # nothing lost
    assert sum(1 for n in counts.values() if n == 2) == 100  # exactly the unacknowledged batch
    assert max(counts.values()) == 2


def test_gap_waits_then_is_recorded_and_skipped(ledger: Ledger, tansu_broker: str) -> None:  # noqa: F811
    from domain.errors import Conflict

    servers = [tansu_broker]
    ensure_topics(servers, 2)
    seed_stores(ledger.app, 2, changes=1)
    store_id = _first_store(ledger)
    stale = ledger.app.get_store(store_id)
    ledger.app.change_store_policy(store_id, now=datetime.now(UTC), crawl_delay=9.0)
    stale.change_policy(crawl_delay=7.0)
    with pytest.raises(Conflict):
        ledger.app._save(stale)  # rolled back: its notification id becomes a hole
    seed_stores(ledger.app, 1, changes=1, start=10)
    head = ledger.source.head()

    relay = make_relay(ledger, servers, batch_size=100, gap_timeout=0.5)
    started = time.monotonic()
    relay.step()
    assert relay.metrics().pending_gap is not None and relay.position < head
    relay.catch_up(timeout=10)
    assert time.monotonic() - started >= 0.5  # it waited before giving up on the hole
    relay.producer.close()
    metrics = relay.metrics()
    assert metrics.position == head and metrics.gaps_seen == 1
    assert ledger.tables.relay_positions().gaps() == [metrics.pending_gap or _gap(ledger, head)]


def _hole_after(ledger: Ledger, stores: int, start: int) -> int:
    """Record `stores` stores, then a rolled-back save (its notification id becomes a
    hole), then one more store; returns the hole's position."""
    from domain.errors import Conflict

    seed_stores(ledger.app, stores, changes=1, start=start)
    store_id = ledger.source.read(ledger.source.head() - 1, 1)[0].stream_id
    stale = ledger.app.get_store(store_id)
    ledger.app.change_store_policy(store_id, now=datetime.now(UTC), crawl_delay=9.0)
    stale.change_policy(crawl_delay=7.0)
    with pytest.raises(Conflict):
        ledger.app._save(stale)
    seed_stores(ledger.app, 1, changes=1, start=start + 1000)
    return _gap(ledger, ledger.source.head())


def test_read_ahead_never_moves_the_position_past_a_gap(
        ledger: Ledger, tansu_broker: str, reader: ProcessReader | None) -> None:  # noqa: F811
    """The batch read ahead (during the flush of a full batch) holds a hole: the relay
    publishes up to the hole, waits, and records it only after its timeout."""
    servers = [tansu_broker]
    ensure_topics(servers, 2)
    hole = _hole_after(ledger, 30, start=0)
    size = (hole - 2) // 2  # batch 3 starts before the hole and holds it
    relay = make_relay(ledger, servers, batch_size=size, gap_timeout=0.5, reader=reader)
    assert relay.step() == size and relay.step() == size  # full: batch 3 is read ahead
    published = relay.step()  # the batch read ahead: up to the hole
    assert reader is None or reader.answered == 2  # the child read batches 2 and 3
    assert relay.position == hole - 1 and published == hole - 1 - 2 * size > 0
    assert relay.metrics().pending_gap == hole
    assert ledger.tables.relay_positions().load().position == hole - 1
    assert relay.step() == 0 and relay.position == hole - 1  # still waiting for it
    relay.catch_up(timeout=10)
    relay.producer.close()
    assert relay.position == ledger.source.head() and ledger.tables.relay_positions().gaps() == [hole]
    head = ledger.source.head()
    ids = {env.position for _, _, env in read_topics(servers, PUBLIC_TOPICS, head - 1)}
    assert ids == set(range(1, head + 1)) - {hole}


class FailingFlush:
    """The relay's producer, whose `flush` fails once on the `fail_on`-th call."""

    def __init__(self, inner: object, fail_on: int) -> None:
        self.inner, self.fail_on, self.flushes = inner, fail_on, 0

    def send(self, topic: str, value: bytes, key: bytes, partition: int | None = None) -> object:
        return self.inner.send(topic, value=value, key=key,  # type: ignore[attr-defined]
                               partition=partition)

    def partitions_for(self, topic: str) -> set[int]:
        return self.inner.partitions_for(topic)  # type: ignore[attr-defined, no-any-return]

    def flush(self, timeout: float | None = None) -> None:
        self.flushes += 1
        if self.flushes == self.fail_on:
            raise ConnectionError("simulated broker failure during the flush")
        self.inner.flush(timeout)  # type: ignore[attr-defined]

    def close(self, timeout: float | None = None) -> None:
        self.inner.close(timeout)  # type: ignore[attr-defined]


def test_a_failed_flush_discards_the_batch_read_ahead(
        ledger: Ledger, tansu_broker: str, reader: ProcessReader | None) -> None:  # noqa: F811
    """Batch 2's flush fails after batch 3 was read ahead: the position stays at batch 1,
    the next step publishes batch 2 again (not 3), and nothing is lost."""
    servers = [tansu_broker]
    ensure_topics(servers, 2)
    total = seed_stores(ledger.app, 100, changes=1)  # 200 events
    producer = FailingFlush(kafka_producer(servers), fail_on=2)
    relay = Relay(ledger.source, ledger.tables.relay_positions(), producer,
                  batch_size=50, reader=reader)
    assert relay.step() == 50
    with pytest.raises(ConnectionError):
        relay.step()  # batch 2 (51..100) sent, not acknowledged; 101..150 read ahead
    assert relay.position == 50 and ledger.tables.relay_positions().load().position == 50
    assert relay.step() == 50 and relay.position == 100  # batch 2 again, from the store
    relay.catch_up()
    producer.close()
    assert relay.position == total
    counts: dict[int, int] = defaultdict(int)
    for _, _, env in read_topics(servers, PUBLIC_TOPICS, total + 50):
        counts[env.position] += 1
    assert set(counts) == set(range(1, total + 1))  # nothing lost
    assert {p for p, n in counts.items() if n == 2} == set(range(51, 101))  # only batch 2 twice
    assert reader is None or reader.answered > 0  # the child's batches were published


def _first_store(ledger: Ledger) -> str:
    return ledger.source.read(0, 1)[0].stream_id


def _gap(ledger: Ledger, head: int) -> int:
    present = {e.position for e in ledger.source.read(0, head)}
    (missing,) = set(range(1, head + 1)) - present
    return missing


def test_wire_value_is_exactly_the_envelope_json(ledger: Ledger) -> None:
    seed_stores(ledger.app, 3, changes=2)
    from streams.relay import wire_value

    for env in ledger.source.read(0, 100):
        assert wire_value(env) == env.to_json().encode()
        stamped = {**env.__dict__, "ledger_id": "ab-c"}
        assert wire_value(env, "ab-c") == json.dumps(stamped, separators=(",", ":")).encode()


def test_listen_wakeup_returns_when_an_event_commits(ledger: Ledger, pg_store_url: str) -> None:  # noqa: F811
    wakeup = wakeup_for(ledger.app.recorder, parse_postgres(pg_store_url).conninfo)
    try:
        assert isinstance(wakeup, NotifyWakeup)
        assert wakeup.wait(0.05) is False  # nothing committed: the timeout ends the wait
        woken: list[bool] = []
        waiter = threading.Thread(target=lambda: woken.append(wakeup.wait(120)))
        waiter.start()
        seed_stores(ledger.app, 1, changes=0)
        waiter.join(120)
        assert woken == [True]  # woken by the insert's NOTIFY, not by the timeout
    finally:
        wakeup.close()


def test_a_commit_in_another_schema_does_not_wake_this_ledgers_listener(
        ledger: Ledger, pg_store_url: str, tmp_path: Path) -> None:  # noqa: F811
    """Two ledgers in one database, each in its own schema: each LISTENs on its own channel."""
    wakeup = wakeup_for(ledger.app.recorder, parse_postgres(pg_store_url).conninfo)
    other_url = f"{backends.PG_URL}?schema=t_{uuid.uuid4().hex[:8]}"
    try:
        with backends.open_ledger(other_url, tmp_path / "other") as other:
            assert other.app.recorder.channel_name != ledger.app.recorder.channel_name
            other_wakeup = wakeup_for(other.app.recorder, parse_postgres(other_url).conninfo)
            try:
                seed_stores(other.app, 1, changes=0)
                assert other_wakeup.wait(120) is True  # the other ledger's own listener woke
            finally:
                other_wakeup.close()
        assert wakeup.wait(0.2) is False  # this one's did not
        seed_stores(ledger.app, 1, changes=0)
        assert wakeup.wait(120) is True
    finally:
        wakeup.close()
        backends.drop_schema(other_url.rsplit("=", 1)[1])


def test_a_crawls_sightings_go_out_one_message_a_product_in_order(
        ledger: Ledger, tansu_broker: str) -> None:  # noqa: F811
    """A `Sightings.Recorded` is published as its `Product.Sighted` envelopes on the
    products topic, keyed by product id, after the product's earlier events; a batch
    boundary inside the log does not split or repeat them."""
    servers = [tansu_broker]
    ensure_topics(servers, 4)
    record_seeded_history(ledger, cycles=6, seed=2)
    app = ledger.app
    store = app.register_store(name="Same", base_url="https://same.example", platform="shopify",
                               now=T0)
    job = app.schedule_job(kind="catalog", url="https://same.example/p.json", now=T0,
                           store_id=store, every=3600, adaptive=False)
    listed = tuple(Observation(f"p{i}", f"P {i}", (Offer("1g", Decimal(i + 10), "USD"),), "in_stock")
                   for i in range(5))
    for hour in range(4):  # the same five products: sightings from the second crawl on
        now = T0 + timedelta(hours=hour, minutes=30)
        app.record_success(job, app.lease(job, "w1", 300, now).lease_id, CrawlSuccess(
            200, "https://same.example/p.json", "test", "1", f"s{hour}", observations=listed), now)
    stored = ledger.source.read(0, 10_000)
    expected = list(expand(stored))
    assert len(expected) >= len(stored) + 3 * 4  # three crawls' sightings of five products
    relay = make_relay(ledger, servers, batch_size=7)
    assert relay.catch_up() == len(expected)
    relay.producer.close()
    assert relay.metrics().position == stored[-1].position
    messages = read_topics(servers, PUBLIC_TOPICS, len(expected))
    assert sorted(env.event_id for _, _, env in messages) == sorted(e.event_id for e in expected)
    by_key: dict[str, list[tuple[int, str]]] = defaultdict(list)
    for topic, key, env in messages:
        assert key.decode() == env.stream_id
        if env.event_type == "Product.Sighted":
            assert topic == PRODUCTS
        by_key[env.stream_id].append((env.position, env.event_type))
    for stream, got in by_key.items():
        assert got == [(e.position, e.event_type) for e in expected if e.stream_id == stream]
