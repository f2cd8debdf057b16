"""`product_as_of(ts)` / `job_as_of(ts)` in analyst SQL agree with `show --as-of`.

A seeded history (price changes, out of stock and back, missed crawls, failed runs)
is written to the Parquet datasets; at seeded random times, inside the `analytics
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
from ledger.bootstrap import Ledger
from ledger.cli.errors import CommandError
from ledger.cli.history import stream_as_of
from projections.datasets import DatasetWriter


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


def expected_job(job: Any) -> dict[str, Any]:
    return {"runs": job.runs, "consecutive_failures": job.consecutive_failures,
            "last_error": job.last_error}


def test_the_macros_agree_with_show_as_of_at_random_times(ledger: Ledger, tmp_path: Any) -> None:
    end = record_seeded_history(ledger, cycles=14, seed=5)
    DatasetWriter(ledger.data_dir, ledger.source).catch_up()
    streams = {e.stream_id: e.stream_type for e in ledger.source.read(0, 100_000)}
    products = [s for s, kind in streams.items() if kind == "Product"]
    jobs = [s for s, kind in streams.items() if kind == "CrawlJob"]
    con = sandboxed(ledger.data_dir / "datasets")
    rng = random.Random(11)
    span = int((end - T0).total_seconds()) + 7200
    times = [T0 + timedelta(seconds=rng.randrange(-3600, span)) for _ in range(12)]
    times += [end, T0]  # the whole history, and only the first commands
    checked = {"products": 0, "out_of_stock": 0, "misses": 0, "failing": 0}
    for at in times:
        stamp = at.isoformat()
        got = product_rows(run_query(con, f"SELECT * FROM product_as_of('{stamp}')").to_pylist())
        for product_id in products:
            product = aggregate_as_of(ledger, ledger.app.get_product, product_id, at)
            if product is None:
                assert product_id not in got, (stamp, product_id)
                continue
            row = got.pop(product_id)
            assert {k: row[k] for k in expected_product(product)} == expected_product(product), \
                (stamp, product_id)
            checked["products"] += 1
            checked["out_of_stock"] += not product.in_stock
            checked["misses"] += product.consecutive_misses > 0
        assert got == {}
        runs = {r["job_id"]: r for r in run_query(
            con, f"SELECT * FROM job_as_of(TIMESTAMPTZ '{stamp}')").to_pylist()}
        for job_id in jobs:
            job = aggregate_as_of(ledger, ledger.app.get_job, job_id, at)
            if job is None or job.runs == 0:
                assert job_id not in runs, (stamp, job_id)
                continue
            row = runs.pop(job_id)
            assert {k: row[k] for k in expected_job(job)} == expected_job(job), (stamp, job_id)
            checked["failing"] += job.consecutive_failures > 0
        assert runs == {}
    # the samples met every kind of state the macros must get right
    assert all(checked.values()), checked


@pytest.mark.parametrize("query", [
    "SELECT count(*) FROM product_as_of(now())",
    "SELECT * FROM job_as_of('2026-03-01') LIMIT 1",
])
def test_the_macros_run_in_the_sandbox_before_any_data(tmp_path: Any, query: str) -> None:
    con = sandboxed(tmp_path / "datasets")
    run_query(con, query)  # no dataset files yet: typed empty views, no error
