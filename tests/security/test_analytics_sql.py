"""`crawl-ledger analytics sql` can only read, attacked through the real CLI.

Issue 43, rows 5-7, each against a small seeded ledger in its own LEDGER_DATA_DIR:

- 5: `EXPLAIN ANALYZE COPY (…) TO 'file'` (and its disguises) is refused, writes
  nothing, and the sandbox allows no directory but the datasets' (no `.tmp`);
- 6: a forged datasets manifest (a position beyond the ledger, an edited one) is
  reported by `audit verify` and repaired, so analytics see every event again;
- 7: a string-heavy query stops at the memory ceiling (peak RSS of the CLI process
  measured), and results over the row or byte budget stop with a clear error.

The analysts' documented queries still run.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path

import pytest
from backends import LOOPBACK_ENV

from domain.values import CrawlSuccess, Observation, Offer
from ledger.bootstrap import bootstrap
from ledger.settings import Settings

CLI = str(Path(sys.executable).with_name("crawl-ledger"))
T0 = datetime(2026, 3, 1, 8, 0, tzinfo=UTC)
PRICES = ("20.00", "20.00", "15.00", "18.00")
GIB = 1 << 30


@dataclass(frozen=True)
class Ran:
    code: int
    out: str
    err: str
    peak_rss: int = 0  # bytes, when measured


def record_crawls(data: Path, prices: tuple[str, ...], start: int = 0) -> None:
    """Crawls of one product at `prices`, an hour apart from hour `start`, recorded in
    `data`'s ledger (the store and its job are registered by the first call)."""
    ledger = bootstrap(Settings.from_env({**LOOPBACK_ENV, "LEDGER_DATA_DIR": str(data)}))
    try:
        app = ledger.app
        if start == 0:
            store = app.register_store(name="Shop", base_url="https://shop.example",
                                       platform="shopify", now=T0)
            app.schedule_job(kind="catalog", url="https://shop.example/products.json", now=T0,
                             store_id=store, every=3600, adaptive=False)
        (job,) = {e.stream_id for e in ledger.source.read(0, 1000) if e.stream_type == "CrawlJob"}
        for n, price in enumerate(prices, start):
            now = T0 + timedelta(hours=n)
            lease = app.lease(job, "w1", 300, now).lease_id
            obs = Observation("p1", "Blue Mug", offers=(Offer("default", Decimal(price), "USD"),),
                              availability="in_stock")
            app.record_success(job, lease, CrawlSuccess(
                200, "https://shop.example/products.json", "shopify", "1", f"h{n}",
                observations=(obs,)), now)
    finally:
        ledger.close()


def ledger_head(data: Path) -> int:
    ledger = bootstrap(Settings.from_env({**LOOPBACK_ENV, "LEDGER_DATA_DIR": str(data)}))
    try:
        return ledger.source.head()
    finally:
        ledger.close()


@pytest.fixture
def data(tmp_path: Path) -> Path:
    """A data dir with four crawls recorded and the datasets written."""
    path = tmp_path / "data"
    record_crawls(path, PRICES)
    assert run(path, tmp_path, "analytics", "sql", "SELECT 1").code == 0
    return path


def run(data: Path, cwd: Path, *args: str) -> Ran:
    """`crawl-ledger ARGS` as a child process; its own peak RSS from `wait4` (the test's
    timeout bounds the wait)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("LEDGER_")}
    env |= LOOPBACK_ENV | {"LEDGER_DATA_DIR": str(data), "COLUMNS": "120", "NO_COLOR": "1"}
    out, err = cwd / "stdout.txt", cwd / "stderr.txt"
    with open(out, "wb") as stdout, open(err, "wb") as stderr:
        proc = subprocess.Popen([CLI, *args], cwd=cwd, env=env, stdout=stdout, stderr=stderr)
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return Ran(proc.returncode, out.read_text(), err.read_text(), usage.ru_maxrss * 1024)


def refused(ran: Ran, reason: str) -> None:
    assert ran.code == 2 and ran.out == "", (ran.code, ran.out[:300], ran.err[:300])
    assert len(ran.err.strip().splitlines()) == 1, ran.err
    assert ran.err.startswith("crawl-ledger: error: analytics sql: ") and reason in ran.err, ran.err


def files_under(root: Path) -> dict[Path, int]:
    """Every file and when it was written (but the writer's lock, opened on each catch-up)."""
    return {p: p.stat().st_mtime_ns for p in root.rglob("*") if p.is_file() and p.name != ".lock"}


# row 5 ----------------------------------------------------------------------------------

def test_row5_explain_analyze_copy_is_refused_and_writes_nothing(data: Path, tmp_path: Path
                                                                 ) -> None:
    datasets = (data / "datasets").resolve()
    cwd_tmp = (tmp_path / ".tmp").resolve()
    before = files_under(datasets)
    attacks = {
        f"EXPLAIN ANALYZE COPY (SELECT * FROM range(10)) TO '{datasets}/x.csv'": "EXPLAIN ANALYZE",
        f"explain /* hi */ analyze copy (select 1) to '{cwd_tmp}/x.csv'": "EXPLAIN ANALYZE",
        f"EXPLAIN (FORMAT json) COPY (SELECT 1) TO '{datasets}/x.csv'": "EXPLAIN may only",
        f"EXPLAIN COPY (SELECT 1) TO '{datasets}/x.csv'": "EXPLAIN may only",
        "EXPLAIN ANALYZE SELECT count(*) FROM price_observations": "EXPLAIN ANALYZE",
    }
    for query, reason in attacks.items():
        refused(run(data, tmp_path, "analytics", "sql", query), reason)
    assert not (datasets / "x.csv").exists() and not cwd_tmp.exists()
    assert files_under(datasets) == before


def test_row5_the_sandbox_allows_no_directory_but_the_datasets(data: Path, tmp_path: Path
                                                               ) -> None:
    query = ("SELECT current_setting('allowed_directories') AS allowed,"
             " current_setting('temp_directory') AS temp")
    ran = run(data, tmp_path, "analytics", "sql", query, "--json")
    assert ran.code == 0, ran.err
    assert json.loads(ran.out) == [{"allowed": [f"{(data / 'datasets').resolve()}/"], "temp": ""}]


# row 6 ----------------------------------------------------------------------------------

def manifest_of(data: Path) -> dict[str, object]:
    loaded: dict[str, object] = json.loads((data / "datasets" / "manifest.json").read_text())
    return loaded


def observations(data: Path, cwd: Path) -> int:
    ran = run(data, cwd, "analytics", "sql", "SELECT count(*) AS n FROM price_observations",
              "--json")
    assert ran.code == 0, ran.err
    count: int = json.loads(ran.out)[0]["n"]
    return count


def test_row6_the_copy_trick_cannot_overwrite_the_manifest(data: Path, tmp_path: Path) -> None:
    manifest = (data / "datasets" / "manifest.json").resolve()
    honest = manifest.read_bytes()
    query = (f"EXPLAIN ANALYZE COPY (SELECT 999999 AS position, state FROM read_json('{manifest}'))"
             f" TO '{manifest}' (FORMAT json)")
    refused(run(data, tmp_path, "analytics", "sql", query), "EXPLAIN ANALYZE")
    assert manifest.read_bytes() == honest


def test_row6_a_manifest_beyond_the_ledger_is_reported_and_repaired(data: Path, tmp_path: Path
                                                                    ) -> None:
    forged = manifest_of(data) | {"position": ledger_head(data) + 1_000_000}
    (data / "datasets" / "manifest.json").write_text(json.dumps(forged))
    record_crawls(data, ("12.00",), start=len(PRICES))  # new events the forgery would hide
    audit = run(data, tmp_path, "audit", "verify")
    assert audit.code == 1, audit.out + audit.err
    assert "TAMPERED (derived data; `crawl-ledger audit repair` rebuilds it): dataset file " \
        "manifest.json: position" in audit.out and "beyond the ledger's last event" in audit.out, \
        audit.out
    assert manifest_of(data) == forged  # verify reports; it changes nothing
    repaired = run(data, tmp_path, "audit", "repair")
    assert repaired.code == 0 and "manifest.json" in repaired.out, repaired.out + repaired.err
    assert manifest_of(data)["position"] == ledger_head(data)
    assert observations(data, tmp_path) == len(PRICES) + 1
    again = run(data, tmp_path, "audit", "verify")
    assert again.code == 0 and "TAMPERED" not in again.out, again.out


def test_row6_a_manifest_edited_within_the_ledger_is_detected_by_analytics(
        data: Path, tmp_path: Path) -> None:
    record_crawls(data, ("12.00", "11.00"), start=len(PRICES))
    forged = manifest_of(data) | {"position": ledger_head(data) - 1}  # skips the last events
    (data / "datasets" / "manifest.json").write_text(json.dumps(forged))
    assert observations(data, tmp_path) == len(PRICES) + 2
    assert manifest_of(data)["position"] == ledger_head(data)


# row 7 ----------------------------------------------------------------------------------

def test_row7_a_string_heavy_query_stops_at_the_memory_ceiling(data: Path, tmp_path: Path
                                                                ) -> None:
    ran = run(data, tmp_path, "analytics", "sql", "SELECT repeat('x',1000000) FROM range(3000)")
    # DuckDB's 1 GB plus the result budget and a margin; without the ceiling: > 2.2 GB
    assert ran.peak_rss < 1.6 * GIB, f"peak RSS {ran.peak_rss / GIB:.2f} GiB"
    refused(ran, "memory limit (1GB)")


def test_row7_results_over_the_row_or_byte_budget_stop_with_a_clear_error(
        data: Path, tmp_path: Path) -> None:
    big = run(data, tmp_path, "analytics", "sql", "SELECT repeat('x', 100000) FROM range(2000)")
    refused(big, "more than 128 MB of result is over the size limit")
    assert big.peak_rss < 1 * GIB, f"peak RSS {big.peak_rss / GIB:.2f} GiB"
    refused(run(data, tmp_path, "analytics", "sql", "SELECT * FROM range(1500000)"), "row limit")


# ordinary use ---------------------------------------------------------------------------

EXAMPLES = {  # the analysts' documented queries (README "For analysts", docs/analytics.md)
    "drops": """SELECT store_name, name, option, old_price, new_price, pct_change, changed_at
        FROM price_changes WHERE abs_change < 0 ORDER BY pct_change LIMIT 10""",
    "averages": """SELECT store_name, category, currency, count(DISTINCT product_id) AS products,
        CAST(avg(price) AS DECIMAL(18,2)) AS avg_price
        FROM products_latest GROUP BY ALL ORDER BY store_name, category""",
    "out_of_stock": """SELECT store_name, name, reason, occurred_at AS out_since
        FROM stock_events WHERE event_type IN ('went_out_of_stock', 'back_in_stock')
        QUALIFY row_number() OVER (PARTITION BY product_id ORDER BY occurred_at DESC,
                                   position DESC) = 1 AND event_type = 'went_out_of_stock'
        ORDER BY out_since""",
    "health": """SELECT date, store_name, count(*) AS attempts,
        round(avg((outcome = 'succeeded')::INT), 3) AS success_rate,
        string_agg(DISTINCT error_kind, ', ') AS error_kinds
        FROM job_runs GROUP BY ALL ORDER BY date, store_name""",
    "asof_join": """WITH probe AS (SELECT DISTINCT product_id, option,
                                   TIMESTAMPTZ '2026-03-01 10:30:00+00' AS t
                                   FROM price_observations)
        SELECT p.t, o.store_name, o.name, o.option, o.price, o.observed_at
        FROM probe p ASOF JOIN price_observations o
          ON p.product_id = o.product_id AND p.option = o.option AND p.t >= o.observed_at
        ORDER BY o.store_name, o.name, o.option""",
    "as_of_macro": "SELECT name, price FROM product_as_of('2026-03-01T10:30:00Z')",
    "explain": "EXPLAIN SELECT count(*) FROM price_observations",
    "describe": "DESCRIBE price_changes",
    "summarize": "SUMMARIZE SELECT price FROM price_observations",
}


def test_documented_queries_still_run(data: Path, tmp_path: Path) -> None:
    answers = {}
    for name, query in EXAMPLES.items():
        ran = run(data, tmp_path, "analytics", "sql", query, "--json")
        assert ran.code == 0, (name, ran.err)
        answers[name] = json.loads(ran.out)
    assert [(r["old_price"], r["new_price"], r["pct_change"]) for r in answers["drops"]] == \
        [("20.0000", "15.0000", -25.0)]
    assert answers["averages"][0]["avg_price"] == "18.00"
    assert answers["out_of_stock"] == []
    assert [(r["attempts"], r["success_rate"]) for r in answers["health"]] == [(4, 1.0)]
    assert [r["price"] for r in answers["asof_join"]] == ["15.0000"]
    assert answers["as_of_macro"] == [{"name": "Blue Mug", "price": "15.0000"}]
    assert answers["explain"][0]["explain_key"] == "physical_plan"
    assert "old_price" in {r["column_name"] for r in answers["describe"]}
    assert answers["summarize"][0]["count"] == len(PRICES)
