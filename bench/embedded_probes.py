"""What the crawl bench measures inside its embedded runner (b): when the first crawl
started and the last result was recorded, each result's record -> read-model latency, and
where the database thread's time goes."""

from __future__ import annotations

import time
from typing import Any

__all__ = ["first_call", "instrument", "percentile"]


def first_call(crawl: Any, marks: dict[str, float]) -> Any:
    """`crawl`, noting when it was first called in `marks["first_crawl"]`."""
    async def crawling(*args: Any, **kwargs: Any) -> Any:
        marks.setdefault("first_crawl", time.perf_counter())
        return await crawl(*args, **kwargs)
    return crawling


def instrument(ledger: Any, db_seconds: dict[str, float],
                marks: dict[str, float]) -> list[float]:
    """Record -> read-model latencies, by wrapping the two calls on the database thread;
    `marks["last_record"]`: when the last result was recorded."""
    app = ledger.app
    recorded: dict[str, float] = {}
    latencies: list[float] = []

    def wrap_record(record: Any) -> Any:
        def recording(job_id: Any, *args: Any, **kwargs: Any) -> Any:
            result = record(job_id, *args, **kwargs)
            recorded[str(job_id)] = marks["last_record"] = time.perf_counter()
            return result
        return recording

    catch_up = ledger.catch_up

    def catching_up() -> int:
        pending = list(recorded.values())
        recorded.clear()
        count: int = catch_up()
        done = time.perf_counter()
        latencies.extend(done - at for at in pending)
        return count

    def wrap_group(record_many: Any) -> Any:
        def recording(items: Any) -> Any:
            answers = record_many(items)
            done = marks["last_record"] = time.perf_counter()
            recorded.update((str(item.job_id), done) for item in items)
            return answers
        return recording

    app.record_success = wrap_record(app.record_success)
    app.record_failure = wrap_record(app.record_failure)
    app.record_many = wrap_group(app.record_many)
    ledger.catch_up = catching_up
    for name in ("lease", "record_many", "record_success", "dispatch_due", "dispatch_and_lease",
                 "reap_expired_leases"):
        setattr(app, name, _timed(name, getattr(app, name), db_seconds))
    ledger.catch_up = _timed("catch_up", ledger.catch_up, db_seconds)
    ledger.read.due_jobs = _timed("due_jobs", ledger.read.due_jobs, db_seconds)
    ledger.read.expired_leases = _timed("expired_leases", ledger.read.expired_leases, db_seconds)
    return latencies


def _timed(name: str, call: Any, seconds: dict[str, float]) -> Any:
    """`call`, adding its duration to `seconds[name]` (where the database thread's time goes)."""
    def timed(*args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return call(*args, **kwargs)
        finally:
            seconds[name] += time.perf_counter() - started
    return timed


def percentile(values: list[float], pct: int) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * pct / 100))]
