"""The invariants every fault case is checked against, and the table that reports them.

- `no_loss`: every event that was stored (acknowledged) before the fault is still
  stored after it, unchanged (same ids, positions, payloads);
- `no_duplicate_effects`: one lease records one outcome; a job's successful runs
  observe each product at most once each; event ids unique;
- `read_models_equal_rebuild`: the live read models equal a rebuild from the log;
- `jobs_settled`: every job ends terminal or rescheduled (none left dispatched
  or leased once the system is idle again).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from domain.envelope import Envelope
from domain.sightings import expand
from projections.framework import table_rows
from projections.rebuild import verify
from projections.runner import ProjectionRunner
from runtime.ledger import Ledger

INVARIANTS = ("no_loss", "no_duplicate_effects", "read_models_equal_rebuild", "jobs_settled")
SETTLED = {"scheduled", "completed", "dead", "cancelled", "paused"}


@dataclass
class FaultTable:
    """case -> invariant -> "ok" / "FAIL: why" / "n/a"; printed at the end of the session."""

    rows: dict[str, dict[str, str]] = field(default_factory=dict)

    def record(self, case: str, invariant: str, problem: str | None) -> None:
        self.rows.setdefault(case, {})[invariant] = "ok" if problem is None else f"FAIL: {problem}"

    def lines(self) -> list[str]:
        width = max((len(c) for c in self.rows), default=4)
        head = f"{'case':<{width}}  " + "  ".join(f"{i:<26}" for i in INVARIANTS)
        out = [head, "-" * len(head)]
        for case, results in sorted(self.rows.items()):  # the same order with any workers
            cells = [results.get(i, "n/a")[:26] for i in INVARIANTS]
            out.append(f"{case:<{width}}  " + "  ".join(f"{c:<26}" for c in cells))
        return out


TABLE = FaultTable()


def check(case: str, checks: dict[str, Callable[[], str | None]]) -> None:
    """Run each invariant's check, record every result, then fail on the first problem."""
    problems = []
    for invariant, run in checks.items():
        problem = run()
        TABLE.record(case, invariant, problem)
        if problem is not None:
            problems.append(f"{invariant}: {problem}")
    assert not problems, "; ".join(problems)


def no_loss(before: Iterable[Envelope], after: Iterable[Envelope]) -> str | None:
    now = {e.event_id: e for e in after}
    lost = [e.event_id for e in before if now.get(e.event_id) != e]
    return f"{len(lost)} stored events lost or changed, e.g. {lost[0]}" if lost else None


def no_duplicate_effects(envelopes: list[Envelope]) -> str | None:
    ids = Counter(e.event_id for e in envelopes)
    if (repeated := [i for i, n in ids.items() if n > 1]):
        return f"event id repeated: {repeated[0]}"
    outcomes = Counter(e.payload["lease_id"] for e in envelopes
                       if e.event_type in ("CrawlJob.Succeeded", "CrawlJob.Failed"))
    if (twice := [lease for lease, n in outcomes.items() if n > 1]):
        return f"lease {twice[0]} recorded {outcomes[twice[0]]} outcomes"
    # each recorded success observes each product at most once (a job's later runs start
    # their attempts at 1 again, so attempts do not tell runs apart; successes do)
    runs = Counter(str(e.stream_id) for e in envelopes if e.event_type == "CrawlJob.Succeeded")
    seen = Counter((str(e.stream_id), e.payload["job_id"]) for e in expand(envelopes)
                   if e.event_type in ("Product.Observed", "Product.Sighted"))
    if (again := [k for k, n in seen.items() if n > runs[k[1]]]):
        product, job = again[0]
        return (f"product {product} observed {seen[again[0]]} times in {runs[job]} "
                f"successful runs of job {job}")
    return None


def read_models_equal_rebuild(ledger: Ledger) -> str | None:
    differing = [c.table for c in verify(ledger.source, ledger.db, ledger.projections) if not c.equal]
    return f"differ from a rebuild: {', '.join(differing)}" if differing else None


def jobs_settled(ledger: Ledger) -> str | None:
    ledger.catch_up()
    stuck = [(r["job_id"], r["state"]) for r in ledger.read.jobs() if r["state"] not in SETTLED]
    return f"{len(stuck)} jobs left {stuck[0][1]}, e.g. {stuck[0][0]}" if stuck else None


def rebuild_differences(ledger: Ledger) -> str | None:
    """The live read-model tables that differ from a rebuild into scratch tables."""
    scratch = ledger.projections("scratch_")
    for projection in scratch:
        projection.drop(ledger.db)
    ProjectionRunner(ledger.source, ledger.db, scratch).catch_up()
    differing = [t.name for p in scratch for t in p.tables
                 if table_rows(ledger.db, t, "") != table_rows(ledger.db, t, "scratch_")]
    return f"differ from a rebuild: {', '.join(differing)}" if differing else None
