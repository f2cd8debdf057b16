"""The distributed leader's tick (`Scheduler.fill`) on both backends: it dispatches due
jobs in slots until `ahead` wait dispatched and unleased, tops that queue up as workers
lease, stops when none is due, and never dispatches a job twice, even when its read
model has not caught up with the last tick."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime

from ledger.bootstrap import Ledger
from runtime.scheduler import Scheduler

T0 = datetime(2026, 3, 1, 8, 0, tzinfo=UTC)


def due_jobs(ledger: Ledger, count: int, hosts: int = 3) -> None:
    for n in range(count):
        ledger.app.schedule_job(kind="product_page", url=f"https://h{n % hosts}.example/p/{n}",
                                now=T0)
    ledger.catch_up()


def dispatched_events(ledger: Ledger) -> Counter[str]:
    return Counter(e.stream_id for e in ledger.source.read(0, 10_000)
                   if e.event_type == "CrawlJob.Dispatched")


def test_the_queue_is_filled_to_ahead_in_slots_and_topped_up_as_workers_lease(
        ledger: Ledger) -> None:
    due_jobs(ledger, 100)
    scheduler = Scheduler(ledger, slot_size=16)
    first = scheduler.fill(T0, ahead=40)  # slots of 16, 16, then the 8 left of the room
    assert len(first) == 40
    ledger.catch_up()
    assert ledger.read.job_counts() == {"dispatched": 40, "scheduled": 60}
    assert scheduler.fill(T0, ahead=40) == []  # the queue is full
    for job_id in first[:25]:  # workers lease 25 of them
        ledger.app.lease(job_id, "worker", 300, T0)
    ledger.catch_up()
    assert len(scheduler.fill(T0, ahead=40)) == 25  # topped up to 40 again
    ledger.catch_up()
    assert ledger.read.job_counts() == {"leased": 25, "dispatched": 40, "scheduled": 35}
    assert len(scheduler.fill(T0, ahead=1000)) == 35  # all that is due, then it stops
    ledger.catch_up()
    assert scheduler.fill(T0, ahead=1000) == []
    counts = dispatched_events(ledger)
    assert len(counts) == 100 and set(counts.values()) == {1}


def test_a_read_model_behind_the_last_tick_dispatches_no_job_twice(ledger: Ledger) -> None:
    due_jobs(ledger, 30)
    scheduler = Scheduler(ledger, slot_size=8)
    assert len(scheduler.fill(T0, ahead=20)) == 20
    # no catch-up: the read model still shows all 30 due and none dispatched
    assert len(scheduler.fill(T0, ahead=20)) == 10  # only the ten not dispatched yet
    ledger.catch_up()
    assert ledger.read.job_counts() == {"dispatched": 30}
    counts = dispatched_events(ledger)
    assert len(counts) == 30 and set(counts.values()) == {1}
