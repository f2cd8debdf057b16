"""`product_as_of(ts)` / `job_as_of(ts)` in analyst SQL agree with `show --as-of`.

A seeded history (price changes, out of stock and back, missed crawls, failed runs)
plus jobs driven through every state (dispatched, leased, an expired lease, paused,
resumed, force-run, dead, retried, cancelled, completed) is written to the Parquet
datasets; at seeded random times, inside the `analytics
sql` sandbox, the macros' rows are compared with the aggregates the CLI's
`products show --as-of` / `jobs show --as-of` replay (`ledger.cli.history.stream_as_of`).
"""

from __future__ import annotations

import random
from datetime import datetime, timedelta
from typing import Any

import pytest
from seeded_history import T0, record_seeded_history

from analytics.sandbox import run_query, sandboxed
from domain.crawl_job import RetryPolicy
from domain.timeutil import parse_iso
from domain.values import CrawlFailure, CrawlSuccess
from ledger.bootstrap import Ledger
from ledger.cli.errors import CommandError
from ledger.cli.history import stream_as_of
from projections.datasets import DatasetWriter
from runtime.as_of import product_as_of


def aggregate_as_of(ledger: Ledger, get: Any, stream_id: str, at: datetime) -> Any:
    try:
        return stream_as_of(ledger, get(stream_id), at.isoformat())[0]
    except CommandError:  # not yet recorded at `at`
        return None


def product_rows(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    found: dict[str, dict[str, Any]] = {}
    for row in rows:
        product = found.setdefault(row["product_id"], dict(row, offers={}))
        product["offers"][f"{row['pricing_type']}:{row['option']}"] = (
            row["price"], row["special_price"], row["currency"])
    return found


def expected_product(p: Any) -> dict[str, Any]:
    return {"name": p.name, "brand": p.brand, "category": p.category,
            "availability": p.availability, "quantity": p.quantity, "in_stock": p.in_stock,
            "out_of_stock_since": p.out_of_stock_since, "last_seen_at": p.last_seen_at,
            "consecutive_misses": p.consecutive_misses, "observations": p.observations,
            "offers": {key: (o["price"], o["special_price"], o["currency"])
                       for key, o in p.offers.items()}}


def with_sightings(ledger: Ledger, product: Any, at: datetime) -> dict[str, Any]:
    """Its observation count and last sighting counting the unchanged sightings, which
    are in crawl events, not in its stream (`runtime.sighting_count`)."""
    state = product_as_of(ledger, product, at)["state"]
    return {"observations": state["observations"], "last_seen_at": parse_iso(state["last_seen_at"])}


def expected_job(job: Any) -> dict[str, Any]:
    return {"state": job.state, "next_run_at": job.next_run_at, "runs": job.runs,
            "consecutive_failures": job.consecutive_failures, "last_error": job.last_error}


def drive_jobs_through_every_state(ledger: Ledger, start: datetime) -> list[datetime]:
    """Jobs of other kinds over the seeded history's hours: each state and move once.
    Returns the command times."""
    app, times = ledger.app, [start]

    def step(minutes: int = 11) -> datetime:
        times.append(times[-1] + timedelta(minutes=minutes))
        return times[-1]

    def job(name: str, every: int | None = 3600, attempts: int = 3) -> Any:
        return app.schedule_job(kind="product_page", url=f"https://gamma.example/{name}",
                                now=step(), every=every, adaptive=False,
                                retry_policy=RetryPolicy(max_attempts=attempts))

    ok = CrawlSuccess(200, "https://gamma.example/", "test", "1", "h")
    expiring, paused, dying, one_shot, cancelled = (
        job("expiring"), job("paused"), job("dying", every=None, attempts=1), job("once", every=None),
        job("cancelled"))
    app.dispatch_due([expiring, cancelled], step())
    app.lease(expiring, "w2", 60, step())
    app.reap_expired_leases([expiring], step(5))  # expired: failed, retry scheduled
    app.pause(paused, step())
    app.resume(paused, step(90))
    app.force_run(paused, step())
    app.record_failure(dying, app.lease(dying, "w2", 300, step()).lease_id,
                       CrawlFailure("http_4xx", "410 Gone", False), step())  # dead
    app.retry(dying, step(30))
    app.record_success(one_shot, app.lease(one_shot, "w2", 300, step()).lease_id, ok, step())
    app.lease(cancelled, "w2", 300, step())
    app.cancel(cancelled, step())
    app.lease(paused, "w2", 300, step())  # leased when the history ends
    return times[1:]


def test_the_macros_agree_with_show_as_of_at_random_times(ledger: Ledger, tmp_path: Any) -> None:
    end = record_seeded_history(ledger, cycles=14, seed=5)
    moves = drive_jobs_through_every_state(ledger, T0 + timedelta(minutes=3))
    end = max(end, moves[-1])
    DatasetWriter(ledger.data_dir, ledger.source, ledger.tables.dataset_manifests).catch_up()
    streams = {e.stream_id: e.stream_type for e in ledger.source.read(0, 100_000)}
    products = [s for s, kind in streams.items() if kind == "Product"]
    jobs = [s for s, kind in streams.items() if kind == "CrawlJob"]
    con = sandboxed(ledger.data_dir / "datasets")
    rng = random.Random(11)
    span = int((end - T0).total_seconds()) + 7200
    times = [T0 + timedelta(seconds=rng.randrange(-3600, span)) for _ in range(12)]
    times += [end, T0]  # the whole history, and only the first commands
    times += moves  # exactly at each state change of those jobs, as its command recorded
    checked = {"products": 0, "out_of_stock": 0, "misses": 0, "failing": 0, "never_ran": 0}
    states: set[str] = set()
    for at in times:
        stamp = at.isoformat()
        got = product_rows(run_query(con, f"SELECT * FROM product_as_of('{stamp}')").to_pylist())
        for product_id in products:
            product = aggregate_as_of(ledger, ledger.app.get_product, product_id, at)
            if product is None:
                assert product_id not in got, (stamp, product_id)
                continue
            row = got.pop(product_id)
            want = expected_product(product) | with_sightings(ledger, product, at)
            assert {k: row[k] for k in want} == want, (stamp, product_id)
            checked["products"] += 1
            checked["out_of_stock"] += not product.in_stock
            checked["misses"] += product.consecutive_misses > 0
        assert got == {}
        runs = {r["job_id"]: r for r in run_query(
            con, f"SELECT * FROM job_as_of(TIMESTAMPTZ '{stamp}')").to_pylist()}
        for job_id in jobs:
            job = aggregate_as_of(ledger, ledger.app.get_job, job_id, at)
            if job is None:
                assert job_id not in runs, (stamp, job_id)
                continue
            row = runs.pop(job_id)
            assert {k: row[k] for k in expected_job(job)} == expected_job(job), (stamp, job_id)
            checked["failing"] += job.consecutive_failures > 0
            checked["never_ran"] += job.runs == 0
            states.add(job.state)
        assert runs == {}
    # the samples met every kind of state the macros must get right
    assert all(checked.values()), checked
    assert states >= {"scheduled", "leased", "paused", "dead", "cancelled", "completed"}, states


@pytest.mark.parametrize("query", [
    "SELECT count(*) FROM product_as_of(now())",
    "SELECT * FROM job_as_of('2026-03-01') LIMIT 1",
])
def test_the_macros_run_in_the_sandbox_before_any_data(tmp_path: Any, query: str) -> None:
    con = sandboxed(tmp_path / "datasets")
    run_query(con, query)  # no dataset files yet: typed empty views, no error
