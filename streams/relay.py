"""The relay: the event store's notification log, in order, to Kafka — at least once.

    source (notification log) --read batch--> producer.send x N --flush, check futures-->
        advance the stored position (only now)

Every envelope goes to its aggregate type's topic (`streams.topics`), keyed
by stream id, so one stream's events land in one partition in version
order. The position is saved only after the broker acknowledged the whole
batch; a crash in between republishes that batch on restart (consumers
dedupe on `event_id` / stream version).

Broker faults: when a batch is not acknowledged (the broker restarted, the
producer hit a fatal error such as an unknown producer id), `run` closes the
producer, builds a new one (`reconnect`), backs off and publishes again from
the last acknowledged position: nothing is skipped, the batch may repeat.

Pipelining: while a full batch is being flushed to the broker, the next one is
read and encoded ahead (`streams.relay_reader`: in a child process, `ProcessReader`,
as `crawl-ledger relay` runs, or in a helper thread); the publishable prefix and
the gaps are still decided at the acknowledged position, after the flush, so the
read-ahead never moves the stored position (it only saves the read's time).

Gaps: notification ids come from a sequence, so a rolled-back insert leaves
a hole. The relay never publishes past a hole at once: it waits up to
`gap_timeout` seconds for the id to appear, then records it as a permanent
gap (`relay_gaps`) and moves on.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from functools import lru_cache
from typing import Any, Protocol

from projections.source import EventSource
from runtime.tables import Offsets, RelayPositionTable
from streams.relay_reader import (
    Pending,
    ProcessReader,
    ThreadReadAhead,
    discard_broken,
    one_line,
)
from streams.topics import Topics
from streams.wakeup import PollWakeup, Wakeup
from streams.wire import Batch, Message, encode_batch, wire_value

__all__ = ["Message", "ProcessReader", "Producer", "PublishFailed", "Relay", "RelayMetrics",
           "kafka_producer", "key_hash", "relay_status", "wire_value"]

log = logging.getLogger(__name__)


class Producer(Protocol):
    def send(self, topic: str, value: bytes, key: bytes, partition: int | None = None) -> Any: ...

    def partitions_for(self, topic: str) -> set[int]: ...

    def flush(self, timeout: float | None = None) -> None: ...

    def close(self, timeout: float | None = None) -> None: ...


@lru_cache(maxsize=8192)
def key_hash(key: bytes) -> int:
    """kafka-python's `DefaultPartitioner` hash of a key (a stream's events come in runs)."""
    from kafka.partitioner.default import murmur2  # kafka-python loads on first use only

    return int(murmur2(key)) & 0x7FFFFFFF


class PublishFailed(Exception):
    """The broker did not acknowledge a batch; nothing was advanced."""


def kafka_producer(servers: list[str], **overrides: Any) -> Producer:
    """kafka-python's idempotent producer, tuned for batches.

    The relay flushes after each batch, so a long `linger_ms` only means
    "send when the batch is complete": fewer, fuller requests and far fewer
    sender wake-ups than a short linger. gzip (in the standard library; every
    Kafka client reads it) about doubles throughput against the broker: the
    envelopes' JSON compresses well and the bytes moved were the bottleneck
    (bench/relay_bench.py).
    """
    from kafka import KafkaProducer

    config: dict[str, Any] = dict(
        bootstrap_servers=servers, client_id="crawl-ledger-relay", acks="all",
        enable_idempotence=True, linger_ms=200, batch_size=512 * 1024, compression_type="gzip",
        max_request_size=4 * 1024 * 1024, retries=10, request_timeout_ms=15_000,
    )
    producer: Producer = KafkaProducer(**(config | overrides))
    return producer


@dataclass(frozen=True)
class RelayMetrics:
    position: int
    head: int
    lag: int
    gaps_seen: int
    published: int
    pending_gap: int | None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class _Gap:
    first: int          # the missing id the relay waits for
    since: float        # monotonic time it was first seen


class Relay:
    """Publishes the notification log to Kafka from its stored position."""

    def __init__(self, source: EventSource, positions: RelayPositionTable, producer: Producer,
                 *, batch_size: int = 2000, gap_timeout: float = 3.0,
                 monotonic: Callable[[], float] = time.monotonic,
                 reconnect: Callable[[], Producer] | None = None, ledger_id: str | None = None,
                 topics: Topics | None = None, reader: ProcessReader | None = None) -> None:
        self.source = source
        self.positions = positions
        self.producer = producer
        self.reconnect = reconnect
        self.ledger_id = ledger_id
        self.topics = topics or Topics()
        self.batch_size = batch_size
        #: reads ahead in a child process while it works (else in a thread)
        self.reader = reader
        self.gap_timeout = gap_timeout
        self.monotonic = monotonic
        stored = positions.load()
        self.position = stored.position
        self.gaps_seen = stored.gaps
        self.published = 0
        self._gap: _Gap | None = None
        self._head = 0
        self._ahead: Pending | None = None

    def metrics(self) -> RelayMetrics:
        head = max(self._head, self.position)
        return RelayMetrics(self.position, head, head - self.position, self.gaps_seen,
                            self.published, self._gap.first if self._gap else None)

    def step(self) -> int:
        """Publish the next batch; returns how many envelopes were published."""
        positions, messages = self._next_batch()
        self._head = max(self._head, positions[-1] if positions else 0)
        ready, skipped = self._contiguous(positions)
        if not ready and not skipped:
            return 0
        new_position = ready[-1] if ready else self.position
        new_position = max([new_position, *skipped])
        if len(positions) >= self.batch_size and len(ready) == len(positions):
            self._ahead = self._read_ahead(new_position)  # more is waiting: read it meanwhile
        offsets = self._publish(messages[:len(ready)])
        self.positions.save(new_position, skipped, _now_iso(), offsets)
        self.position = new_position
        self.gaps_seen += len(skipped)
        self.published += len(ready)
        return len(ready)

    def _next_batch(self) -> Batch:
        """The batch after the acknowledged position: the one read ahead while the last
        batch was flushed when it starts there and could be read, else read now."""
        ahead, self._ahead = self._ahead, None
        if ahead is not None and ahead.after == self.position:
            batch = ahead.result()
            if batch is not None:
                return batch
        return self._read(self.position)

    def _read(self, after: int) -> Batch:
        return encode_batch(self.source.read(after, self.batch_size), self.topics, self.ledger_id)

    def _read_ahead(self, after: int) -> Pending:
        if self.reader is not None:
            pending = self.reader.read_ahead(after, self.batch_size, self.topics, self.ledger_id)
            if pending is not None:
                return pending
        return ThreadReadAhead(self._read, after)

    def _contiguous(self, positions: Sequence[int]) -> tuple[list[int], list[int]]:
        """The publishable prefix's positions, and the ids given up as permanent gaps
        before it."""
        expected = self.position + 1
        ready: list[int] = []
        skipped: list[int] = []
        for position in positions:
            if ready and position == ready[-1]:  # another message of that event (sightings)
                ready.append(position)
                continue
            if position != expected:
                if not self._gap_expired(expected):
                    break
                skipped.extend(range(expected, position))
                log.warning("relay: notification ids %d..%d never appeared, skipped as a gap",
                            expected, position - 1)
            ready.append(position)
            expected = position + 1
        else:
            self._gap = None
        return ready, skipped

    def _gap_expired(self, missing: int) -> bool:
        now = self.monotonic()
        if self._gap is None or self._gap.first != missing:
            self._gap = _Gap(missing, now)
        if now - self._gap.since < self.gap_timeout:
            return False
        self._gap = None
        return True

    def _publish(self, messages: Sequence[Message]) -> Offsets:
        """Send and wait for every acknowledgement; the next offset per topic-partition.

        Each message names its partition: the one kafka-python's default partitioner
        picks (murmur2 of the key over the topic's sorted partitions), with the
        partition list looked up once a batch and each key hashed once
        (`key_hash`), not per message (a fifth of a send's time)."""
        if not messages:
            return {}
        producer = self.producer
        partitions = {topic: sorted(producer.partitions_for(topic))
                      for topic in {message[0] for message in messages}}
        send = producer.send
        futures = [send(topic, value=value, key=key,
                        partition=partitions[topic][key_hash(key) % len(partitions[topic])])
                   for topic, value, key in messages]
        self.producer.flush()
        failed = [f.exception for f in futures if not f.succeeded()]
        if failed:
            raise PublishFailed(f"{len(failed)} of {len(futures)} messages not acknowledged: "
                                f"{failed[0]!r}")
        offsets: Offsets = {}
        for future in futures:
            meta = future.value
            slot = (meta.topic, meta.partition)
            offsets[slot] = max(offsets.get(slot, 0), meta.offset + 1)
        return offsets

    def catch_up(self, timeout: float = 60.0) -> int:
        """Publish until the head seen at the start is reached (tests, one-shot runs)."""
        target = self.source.head()
        deadline = self.monotonic() + timeout
        total = 0
        while self.position < target:
            total += self.step()
            if self.monotonic() > deadline:
                raise TimeoutError(f"relay stuck at {self.position} of {target}")
            if self._gap is not None:
                time.sleep(0.05)
        return total

    def run(self, stop: threading.Event, poll_interval: float = 0.1,
            on_step: Callable[[RelayMetrics], None] | None = None,
            wakeup: Wakeup | None = None) -> None:
        """Relay until `stop` is set. When idle it waits for `wakeup` (a NOTIFY from the
        store: events are published as soon as they commit), at most `poll_interval` s."""
        wakeup = wakeup or PollWakeup(stop)
        failures = 0
        while not stop.is_set():
            try:
                published = self.step()
                failures = 0
            except Exception as error:  # noqa: BLE001 - any producer/broker fault
                if self.reconnect is None:
                    raise
                failures += 1
                self._recover(error, failures, stop)
                continue
            if on_step is not None:
                on_step(self.metrics())
            if published < self.batch_size and not stop.is_set():
                self._head = self.source.head()
                wakeup.wait(poll_interval)


    def _recover(self, error: Exception, failures: int, stop: threading.Event) -> None:
        """A step failed (the broker or the event store): drop the event store's dead
        connections and the producer, wait (1, 2, 4… up to 30 s, or until stopped) and
        build a new producer; the stored position is untouched, so the next step reads
        and sends the batch again."""
        assert self.reconnect is not None
        delay = min(2.0 ** (failures - 1), 30.0)
        log.warning("relay: a batch failed at position %d (%s); trying again in %.0f s",
                    self.position, one_line(error), delay)
        discard_broken(self.source)
        try:
            self.producer.close(timeout=1.0)
        except Exception:  # noqa: BLE001 - a broken producer may fail to close too
            log.debug("relay: closing the failed producer failed", exc_info=True)
        if stop.wait(delay):
            return
        try:
            self.producer = self.reconnect()
        except Exception as again:  # noqa: BLE001 - the broker is still away: next turn
            log.warning("relay: cannot reach the broker yet (%s)", one_line(again))


def relay_status(source: EventSource, positions: RelayPositionTable) -> dict[str, Any]:
    """Metrics from the stored position and the store's head (no running relay needed)."""
    stored = positions.load()
    head = max(source.head(), stored.position)
    return {"position": stored.position, "head": head, "lag": head - stored.position,
            "gaps_seen": stored.gaps}


def _now_iso() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
