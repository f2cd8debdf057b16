"""Stream agents' bookkeeping: no consumed message is stepped over, stalled partitions are
found, and stuck work is re-sent without piling up copies."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace
from typing import Any, cast

from domain.envelope import Envelope
from streams.agents import StallWatchdog, redrive
from streams.kafka_projection import Consumed, contiguous
from streams.records import WorkItem

ENV = cast(Envelope, None)  # the envelope plays no part in the offset bookkeeping


def msgs(topic: str, partition: int, *offsets: int) -> list[Consumed]:
    return [Consumed(topic, partition, o, ENV) for o in offsets]


def offsets_of(batch: list[Consumed]) -> list[tuple[str, int, int]]:
    return [(m.topic, m.partition, m.offset) for m in batch]


def test_contiguous_applies_the_run_that_continues_at_the_stored_offset() -> None:
    batch = msgs("a", 0, 5, 6, 7) + msgs("a", 1, 0, 1)
    assert offsets_of(contiguous(batch, {("a", 0): 5, ("a", 1): 0})) == [
        ("a", 0, 5), ("a", 0, 6), ("a", 0, 7), ("a", 1, 0), ("a", 1, 1)]


def test_contiguous_never_steps_over_a_lost_message() -> None:
    # offset 6 of a/0 never arrived: 7 and 8 wait; a/1 is not held back by it
    batch = msgs("a", 0, 5, 7, 8) + msgs("a", 1, 3)
    assert offsets_of(contiguous(batch, {("a", 0): 5, ("a", 1): 3})) == [("a", 0, 5), ("a", 1, 3)]
    assert contiguous(msgs("a", 0, 7, 8), {("a", 0): 5}) == []


def test_contiguous_drops_redelivered_and_duplicate_messages_and_sorts() -> None:
    batch = msgs("a", 0, 3, 4, 6, 5, 5, 4)
    assert offsets_of(contiguous(batch, {("a", 0): 4})) == [("a", 0, 4), ("a", 0, 5), ("a", 0, 6)]


def test_watchdog_reports_a_partition_behind_the_relay_that_did_not_move() -> None:
    dog = StallWatchdog()
    tp, other = ("ledger.products.v1", 0), ("ledger.products.v1", 1)
    published = {tp: 10, other: 4}
    assert dog.stalled({tp, other}, {tp: 7, other: 4}, published) == {}  # first sighting
    assert dog.stalled({tp, other}, {tp: 7, other: 4}, published) == {tp: 7}
    # after the seek it gets one more check before being reported again
    assert dog.stalled({tp, other}, {tp: 7, other: 4}, published) == {}
    assert dog.stalled({tp, other}, {tp: 7, other: 4}, published) == {tp: 7}


def test_watchdog_leaves_moving_caught_up_and_foreign_partitions_alone() -> None:
    dog = StallWatchdog()
    tp, foreign = ("ledger.products.v1", 0), ("ledger.products.v1", 3)
    published = {tp: 10, foreign: 9}
    assert dog.stalled({tp}, {tp: 2, foreign: 1}, published) == {}
    assert dog.stalled({tp}, {tp: 5, foreign: 1}, published) == {}  # progressing
    assert dog.stalled({tp}, {tp: 10, foreign: 1}, published) == {}  # caught up
    assert dog.stalled({tp}, {tp: 10, foreign: 1}, published) == {}
    # a partition handed over by a rebalance starts its count again
    dog.stalled({tp}, {tp: 6}, {tp: 9})
    assert dog.stalled(set(), {tp: 6}, {tp: 9}) == {}
    assert dog.stalled({tp}, {tp: 6}, {tp: 9}) == {}


class FakeClock:
    def __init__(self) -> None:
        self.at = datetime(2026, 1, 1, tzinfo=UTC)

    def now(self) -> datetime:
        return self.at


class FakeTopic:
    def __init__(self) -> None:
        self.sent: list[str] = []

    async def send(self, key: bytes, value: WorkItem) -> Any:
        self.sent.append(value.job_id)
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        done.set_result(None)
        return done


def test_redrive_resends_a_stuck_job_once_per_interval() -> None:
    clock, topic = FakeClock(), FakeTopic()
    stuck = [WorkItem(job_id="j1", url="http://a.test/x", host="a.test"),
             WorkItem(job_id="j2", url="http://b.test/y", host="b.test")]

    async def call(fn: Any, before: str) -> list[WorkItem]:
        return list(stuck)

    res = SimpleNamespace(clock=clock, options=SimpleNamespace(redrive_after=60.0),
                          redriven={}, call=call)
    def run() -> None:
        asyncio.run(redrive(cast(Any, res), topic))

    run()
    assert topic.sent == ["j1", "j2"]
    clock.at += timedelta(seconds=15)  # the leader's next tick: still queued, not sent again
    run()
    assert topic.sent == ["j1", "j2"]
    stuck.pop()  # j2 got leased meanwhile
    clock.at += timedelta(seconds=61)  # a whole interval later j1 is still stuck: once more
    run()
    assert topic.sent == ["j1", "j2", "j1"]
