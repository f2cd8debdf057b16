"""Time-slot load spreading on both backends: a crowd of recurring jobs due in one slot
is spread by `rebalance` (each move a `Rescheduled` event with its reason, within half
an interval, never before now), the read model shows the new distribution, a preview
records nothing, and a new job is placed in the least-loaded slot its interval allows."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from ledger.bootstrap import Ledger
from runtime.slots import (
    Planned,
    distribution,
    place,
    plan,
    planned_jobs,
    planned_load,
    rebalance,
)

NOW = datetime(2026, 3, 2, 9, 7, tzinfo=UTC)


def crowd(ledger: Ledger, count: int = 48, every: int = 4 * 3600) -> list[str]:
    return [str(ledger.app.schedule_job(kind="catalog", url=f"https://s{i}.example/c",
                                        now=NOW - timedelta(minutes=1), every=every,
                                        start_at=NOW + timedelta(minutes=30)))
            for i in range(count)]


def test_rebalance_spreads_a_crowded_slot(ledger: Ledger) -> None:
    jobs = crowd(ledger)
    ledger.catch_up()  # the runner's projector step: the read model has the jobs
    head = ledger.source.head()
    moves, before, after = rebalance(ledger, NOW, apply=False)
    assert ledger.source.head() == head  # a preview records nothing
    assert before.score == 16.0  # 48 jobs x 6 runs in 96 slots: all in 6 slots
    # reachable: the 10 slots from now (09:07) to half an interval past 09:37, so the
    # best is 5 runs in the busiest slot (48 / 10, rounded up): score 5 / 3 mean
    assert max(after.counts) == 5 and after.score == 1.67 and len(moves) >= 40
    moves, before, after = rebalance(ledger, NOW, apply=True)
    ledger.catch_up()
    assert distribution(planned_jobs(ledger), NOW).counts == after.counts
    events = [e for e in ledger.source.read(head, 1000) if e.event_type == "CrawlJob.Rescheduled"]
    assert len(events) == len(moves)
    assert all(e.payload["reason"].startswith("rebalance: ") for e in events)
    for job in ledger.read.jobs(state="scheduled"):
        moved = datetime.fromisoformat(job["next_run_at"])
        assert NOW <= moved <= NOW + timedelta(minutes=30, hours=2)  # within half an interval
    assert {j["job_id"] for j in ledger.read.jobs()} == set(jobs)
    # the next rebalance starts from there (each may move a job half an interval)
    _, now_before, now_after = rebalance(ledger, NOW, apply=False)
    assert now_before.counts == after.counts and now_after.score <= after.score


def test_a_new_job_goes_to_the_least_loaded_slot(ledger: Ledger) -> None:
    crowd(ledger, count=10, every=3600)  # every hour at :37
    ledger.catch_up()  # the runner's projector step: the read model has the jobs
    start = place(planned_jobs(ledger), 3600, NOW)
    assert NOW <= start < NOW + timedelta(hours=1)
    busy = NOW + timedelta(minutes=30)
    assert not (busy - timedelta(minutes=15) < start <= busy)  # not the crowded slot
    empty = place([], 3600, NOW)
    assert empty == NOW  # nothing to avoid: run now


def test_a_flat_schedule_moves_nothing() -> None:
    flat = [Planned(f"j{i}", NOW + timedelta(minutes=15 * i), 4 * 3600) for i in range(16)]
    moves, before, after = plan(flat, NOW)
    assert moves == [] and before.score == after.score == 1.0


def test_plan_rules() -> None:
    jobs = [Planned(f"j{i}", NOW - timedelta(hours=1), 3600) for i in range(8)]
    moves, before, after = plan(jobs, NOW, slot=900, horizon=3600)
    assert before.counts == [8, 0, 0, 0] and after.score < before.score
    assert all(m.after >= NOW for m in moves)  # overdue jobs are never moved into the past
    with pytest.raises(ValueError, match="slot"):
        distribution(jobs, NOW, slot=5)
    with pytest.raises(ValueError, match="horizon"):
        distribution(jobs, NOW, slot=900, horizon=60)


def _one_by_one(jobs: list[Planned], now: datetime, slot: int, horizon: int) -> list[int]:
    """Runs per slot counted job by job, run by run (the rule `distribution` follows)."""
    start = datetime.fromtimestamp(now.timestamp() - now.timestamp() % slot, now.tzinfo)
    counts = [0] * -(-horizon // slot)
    for job in jobs:
        at = max(job.next_run_at, start)
        while at < start + timedelta(seconds=len(counts) * slot):
            counts[int((at - start).total_seconds() // slot)] += 1
            at += timedelta(seconds=job.interval)
    return counts


def test_planned_load_counts_what_the_jobs_one_by_one_count(ledger: Ledger) -> None:
    """Overdue jobs, jobs past the horizon, seconds inside a minute and intervals that are
    not whole minutes: the grouped read (`planned_load`) counts as job by job does."""
    app = ledger.app
    starts = [NOW - timedelta(hours=3), NOW + timedelta(seconds=59.5), NOW + timedelta(hours=5,
              seconds=17), NOW + timedelta(hours=30), NOW + timedelta(minutes=52, seconds=1)]
    for i, (start, every) in enumerate((s, e) for s in starts for e in (900, 3600, 4000, 86400)):
        app.schedule_job(kind="catalog", url=f"https://s{i}.example/c", now=NOW - timedelta(
            hours=4), every=every, start_at=start)
    app.schedule_job(kind="product_page", url="https://once.example/p", now=NOW)  # one-shot
    ledger.catch_up()
    jobs = planned_jobs(ledger)
    assert len(jobs) == 20
    for slot, hours in ((900, 24), (300, 6), (3600, 48)):
        found, recurring = planned_load(ledger, NOW, slot, hours * 3600)
        assert recurring == 20
        assert found.counts == _one_by_one(jobs, NOW, slot, hours * 3600)
        assert found.counts == distribution(jobs, NOW, slot, hours * 3600).counts
        assert sum(found.counts) > 20
