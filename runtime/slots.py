"""Time-slot load spreading: recurring jobs placed so the load per slot stays flat.

Time is cut into slots (default 15 minutes) over a horizon (default 24 hours). A
recurring job runs at its next run and every interval after it, so each job puts one
run in the slots of those times. The **spread score** is the busiest slot's runs
over the mean per slot (1.0: perfectly flat; 4.0: the busiest slot carries four
times the mean).

- `distribution` counts runs per slot and scores them; `planned_load` does so for the
  scheduled recurring jobs without reading them one by one (the dashboard's and the
  API's schedule view): the read model groups them by interval and minute of their
  next run, and the runs are counted per group, vectorized.
- `place` picks the first run of a new recurring job: the least-loaded slot its
  interval allows (within one interval from now).
- `plan` rebalances: the jobs in the busiest slots first, each job's next run goes to
  the slot-aligned time within half an interval of where it is (of now, if it is
  overdue; never before now),
  whose runs land in the least-loaded slots; a job moves only when that is strictly
  better, in passes until none moves, so a rebalanced schedule moves nothing. Each
  move carries its reason.
Moving a job never changes its interval; the moves are `Rescheduled` events.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

import numpy as np

from domain.timeutil import iso
from domain.values import Origin
from runtime.ledger import Ledger

__all__ = ["Distribution", "Move", "Planned", "distribution", "place", "plan", "planned_jobs",
           "planned_load", "rebalance"]

SLOT = 900
HORIZON = 86400


@dataclass(frozen=True)
class Planned:
    """A recurring job as the planner sees it."""

    job_id: str
    next_run_at: datetime
    interval: int


@dataclass(frozen=True)
class Distribution:
    start: datetime
    slot: int
    counts: list[int]

    @property
    def score(self) -> float:
        """Busiest slot over the mean (1.0 when there is nothing to spread)."""
        total = sum(self.counts)
        return round(max(self.counts) / (total / len(self.counts)), 2) if total else 1.0

    def slot_start(self, index: int) -> datetime:
        return self.start + timedelta(seconds=index * self.slot)


@dataclass(frozen=True)
class Move:
    job_id: str
    before: datetime
    after: datetime
    reason: str


def _aligned(now: datetime, slot: int) -> datetime:
    epoch = now.timestamp()
    return datetime.fromtimestamp(epoch - epoch % slot, now.tzinfo)


def _runs(first: datetime, interval: int, start: datetime, slot: int, slots: int) -> list[int]:
    """The slots a job starting at `first` runs in (an overdue job runs now, slot 0)."""
    found, offset = [], max(0.0, (first - start).total_seconds())
    step = max(interval, 1)
    while offset < slots * slot:
        found.append(max(0, int(offset // slot)))
        offset += step
    return found


def distribution(jobs: Sequence[Planned], now: datetime, slot: int = SLOT,
                 horizon: int = HORIZON) -> Distribution:
    _check(slot, horizon)
    start, slots = _aligned(now, slot), -(-horizon // slot)
    groups = [(job.next_run_at, job.interval, 1) for job in jobs]
    return Distribution(start, slot, _counts(groups, start, slot, slots))


_US = 1_000_000


def _counts(groups: Sequence[tuple[datetime, int, int]], start: datetime, slot: int,
            slots: int) -> list[int]:
    """Runs per slot of (first run, interval, jobs) groups, as `_runs` places them: each
    group's runs at first + k * interval (an overdue first run now), in microseconds."""
    if not groups:
        return [0] * slots
    span, tick = slots * slot * _US, timedelta(microseconds=1)
    offset = np.array([max(0, (first - start) // tick) for first, _, _ in groups], np.int64)
    step = np.array([max(interval, 1) * _US for _, interval, _ in groups], np.int64)
    weight = np.array([jobs for _, _, jobs in groups], np.int64)
    runs = np.where(offset < span, (span - offset + step - 1) // step, 0)
    which = np.repeat(np.arange(len(groups)), runs)
    nth = np.arange(int(runs.sum())) - np.repeat(np.cumsum(runs) - runs, runs)
    index = (offset[which] + nth * step[which]) // (slot * _US)
    found = np.bincount(index, weights=weight[which], minlength=slots)
    return [int(n) for n in found[:slots]]


def _cost(runs: list[int], counts: list[int]) -> tuple[int, int]:
    return (max((counts[i] + 1 for i in runs), default=0), sum(counts[i] for i in runs))


def _candidates(job: Planned, now: datetime, start: datetime, slot: int,
                earliest: datetime, latest: datetime) -> list[datetime]:
    first = max(earliest, start)
    index = -(-int((first - start).total_seconds()) // slot)
    found = []
    at = start + timedelta(seconds=index * slot)
    while at <= latest:
        if at >= now:
            found.append(at)
        at += timedelta(seconds=slot)
    return found


def place(jobs: Sequence[Planned], interval: int, now: datetime, slot: int = SLOT,
          horizon: int = HORIZON) -> datetime:
    """The first run for a new job of `interval`: the least-loaded slot within one
    interval from now (now itself when that is as good)."""
    current = distribution(jobs, now, slot, horizon)
    slots = len(current.counts)
    best, best_cost = now, _cost(_runs(now, interval, current.start, slot, slots),
                                 current.counts)
    latest = now + timedelta(seconds=interval - 1)
    for at in _candidates(Planned("", now, interval), now, current.start, slot, now, latest):
        cost = _cost(_runs(at, interval, current.start, slot, slots), current.counts)
        if cost < best_cost:
            best, best_cost = at, cost
    return best


def plan(jobs: Sequence[Planned], now: datetime, slot: int = SLOT, horizon: int = HORIZON,
         passes: int = 8) -> tuple[list[Move], Distribution, Distribution]:
    """The moves that flatten the load, and the distributions before and after them.

    Local search from where the jobs are: in each pass the jobs in the busiest slots go
    first; each is taken out and put back at the candidate time whose runs land in the
    least-loaded slots, moving only when that is strictly better than where it was.
    Passes repeat until one moves nothing, so a schedule that is already as flat as the
    windows allow (a rebalanced one) moves nothing."""
    before = distribution(jobs, now, slot, horizon)
    start, slots = before.start, len(before.counts)
    counts = list(before.counts)
    current = {job.job_id: job for job in jobs}
    where = {job.job_id: _runs(job.next_run_at, job.interval, start, slot, slots)
             for job in jobs}
    for _ in range(passes):
        changed = False
        for job in sorted(jobs, key=lambda j: (
                -max((counts[i] for i in where[j.job_id]), default=0), j.interval, j.job_id)):
            at = current[job.job_id].next_run_at
            for index in where[job.job_id]:
                counts[index] -= 1
            best, best_runs = at, where[job.job_id]
            best_cost = _cost(best_runs, counts)
            half, center = timedelta(seconds=job.interval // 2), max(job.next_run_at, now)
            for candidate in _candidates(job, now, start, slot, center - half, center + half):
                runs = _runs(candidate, job.interval, start, slot, slots)
                cost = _cost(runs, counts)
                if cost < best_cost:
                    best, best_runs, best_cost = candidate, runs, cost
            for index in best_runs:
                counts[index] += 1
            if best != at:
                changed = True
                current[job.job_id], where[job.job_id] = replace(job, next_run_at=best), best_runs
        if not changed:
            break
    moves = []
    for job in jobs:
        after = current[job.job_id].next_run_at
        if after != job.next_run_at:
            first = _runs(job.next_run_at, job.interval, start, slot, slots)
            busy = before.counts[first[0]] if first else 0
            landed = counts[where[job.job_id][0]] if where[job.job_id] else 0
            moves.append(Move(job.job_id, job.next_run_at, after,
                              f"rebalance: {busy} runs in its slot at "
                              f"{before.slot_start(first[0]).isoformat() if first else '-'}; "
                              f"moved to a slot with {landed}"))
    return moves, before, distribution(list(current.values()), now, slot, horizon)


def _check(slot: int, horizon: int) -> None:
    if not 60 <= slot <= 86400:
        raise ValueError(f"a slot must be 1 minute to 1 day, not {slot} s")
    if not slot <= horizon <= 30 * 86400:
        raise ValueError(f"the horizon must be one slot to 30 days, not {horizon} s")


def planned_jobs(ledger: Ledger) -> list[Planned]:
    """Every scheduled recurring job, from the job-status read model as it is (the caller
    catches it up if it must be current)."""
    # three columns of the read model, in its listing order (`ReadModel.jobs`): reading
    # whole rows cost five times as much with 10,000 jobs
    rows = ledger.db.query("SELECT job_id, next_run_at, interval_s FROM job_status "
                           "WHERE state = 'scheduled' AND interval_s > 0 "
                           "ORDER BY created_at, job_id")
    return [Planned(str(r["job_id"]), datetime.fromisoformat(str(r["next_run_at"])),
                    int(r["interval_s"])) for r in rows]


def planned_load(ledger: Ledger, now: datetime, slot: int = SLOT,
                 horizon: int = HORIZON) -> tuple[Distribution, int]:
    """The distribution of every scheduled recurring job's runs (as `distribution` of
    `planned_jobs` counts them) and how many such jobs there are.

    The read model answers groups, not jobs: a job whose interval is whole minutes lands
    in the same slots whatever second of its minute it starts at (slots start on whole
    minutes), and every overdue job runs now, so jobs are counted per (interval, minute
    of the next run) and only jobs of another interval are read one by one. It reads the
    read model as it is (the caller catches it up if it must be current)."""
    _check(slot, horizon)
    start, slots = _aligned(now, slot), -(-horizon // slot)
    begin, end = iso(start), iso(start + timedelta(seconds=slots * slot))
    recurring = "state = 'scheduled' AND interval_s > 0"
    # '' overdue (runs now), '~' after the horizon (counted as jobs, no run), else the minute
    minute = ("CASE WHEN next_run_at < ? THEN '' WHEN next_run_at >= ? THEN '~' "
              "ELSE substr(next_run_at, 1, 16) END")
    grouped = ledger.db.query(
        f"SELECT interval_s, minute, count(*) AS n FROM (SELECT interval_s, {minute} AS minute "
        f"FROM job_status WHERE {recurring} AND interval_s = interval_s / 60 * 60) AS planned "
        "GROUP BY interval_s, minute", (begin, end))
    odd = ledger.db.query(f"SELECT interval_s, next_run_at FROM job_status WHERE {recurring} "
                          "AND interval_s <> interval_s / 60 * 60")
    groups = [(datetime.fromisoformat(f"{r['minute']}:00+00:00") if r["minute"] else start,
               int(r["interval_s"]), int(r["n"])) for r in grouped if r["minute"] != "~"]
    groups += [(datetime.fromisoformat(str(r["next_run_at"])), int(r["interval_s"]), 1)
               for r in odd]
    total = sum(int(r["n"]) for r in grouped) + len(odd)
    return Distribution(start, slot, _counts(groups, start, slot, slots)), total


def rebalance(ledger: Ledger, now: datetime, apply: bool, slot: int = SLOT,
              horizon: int = HORIZON, origin: Origin | None = None
              ) -> tuple[list[Move], Distribution, Distribution]:
    """Plan the moves from the job-status read model as it is (the caller catches it up);
    with `apply`, record them (`Rescheduled` with each reason, and who asked)."""
    moves, before, after = plan(planned_jobs(ledger), now, slot, horizon)
    if apply:
        for start in range(0, len(moves), 500):
            ledger.app.move_jobs([(m.job_id, m.after, m.reason)
                                  for m in moves[start:start + 500]], now, origin)
    return moves, before, after
