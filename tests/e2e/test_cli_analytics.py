"""`crawl-ledger analytics …` end to end: the event store in LEDGER_DATA_DIR, real output."""

from __future__ import annotations

import csv
import io
import json
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path

import pytest

from domain.values import CrawlSuccess, Observation, Offer
from ledger import cli
from ledger.bootstrap import bootstrap
from ledger.settings import Settings

T0 = datetime(2026, 3, 1, 8, 0, tzinfo=UTC)
PRICES = ("20.00", "20.00", "15.00", "18.00")


@pytest.fixture
def product_id(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """Four crawls of one product (a drop, then a rise) recorded in a fresh data dir."""
    monkeypatch.setenv("LEDGER_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.delenv("LEDGER_STORE", raising=False)
    ledger = bootstrap(Settings.from_env())
    try:
        app = ledger.app
        store = app.register_store(name="Shop", base_url="https://shop.example",
                                   platform="shopify", now=T0)
        job = app.schedule_job(kind="catalog", url="https://shop.example/products.json", now=T0,
                               store_id=store, every=3600, adaptive=False)
        for n, price in enumerate(PRICES):
            now = T0 + timedelta(hours=n)
            lease = app.lease(job, "w1", 300, now).lease_id
            obs = Observation("p1", "Blue Mug", offers=(Offer("default", Decimal(price), "USD"),),
                              availability="in_stock")
            app.record_success(job, lease, CrawlSuccess(
                200, "https://shop.example/products.json", "shopify", "1", f"h{n}",
                observations=(obs,)), now)
        (pid,) = {e.stream_id for e in ledger.source.read(0, 100) if e.stream_type == "Product"}
        return pid
    finally:
        ledger.close()


QUERY = "SELECT old_price, new_price, pct_change FROM price_changes ORDER BY changed_at"


def test_sql_json(product_id: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["analytics", "sql", QUERY, "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert rows == [{"old_price": "20.0000", "new_price": "15.0000", "pct_change": -25.0},
                    {"old_price": "15.0000", "new_price": "18.0000", "pct_change": 20.0}]


def test_sql_csv(product_id: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["analytics", "sql", QUERY, "--csv"]) == 0
    rows = list(csv.reader(io.StringIO(capsys.readouterr().out)))
    assert rows == [["old_price", "new_price", "pct_change"],
                    ["20.0000", "15.0000", "-25.0"], ["15.0000", "18.0000", "20.0"]]


def test_sql_table(product_id: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["analytics", "sql", "SELECT count(*) AS n FROM price_observations"]) == 0
    out = capsys.readouterr().out
    rows = [line.split() for line in out.splitlines() if line.strip()]
    assert rows[1] == ["n"] and rows[-1] == ["4"]  # the column's header, then its one value


def test_bad_sql_prints_duckdbs_message_in_one_line(product_id: str,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["analytics", "sql", "SELEC 1"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith('crawl-ledger: error: analytics sql: Parser Error: syntax error')
    assert len(captured.err.strip().splitlines()) == 1
    assert cli.main(["analytics", "sql", "SELECT * FROM no_such_view"]) == 2
    assert "Catalog Error" in capsys.readouterr().err


HOSTILE = {
    "COPY (SELECT 1) TO 'x.csv'": "COPY statements are refused",
    "SELECT * FROM read_csv('/etc/passwd')": "Permission Error",
    "SELECT * FROM read_text('/etc/hostname')": "Permission Error",
    "ATTACH 'other.db' AS other": "ATTACH statements are refused",
    "INSTALL httpfs": "statements are refused",
    "SET enable_external_access = true": "SET statements are refused",
    "SELECT 1; COPY (SELECT 1) TO 'x.csv'": "one statement at a time",
    "CREATE TABLE t AS SELECT 1": "statements are refused",
    "DROP VIEW price_observations": "statements are refused",
}


@pytest.mark.parametrize("query", list(HOSTILE))
def test_hostile_sql_exits_2_in_one_line_and_writes_nothing(
        query: str, product_id: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    workdir = tmp_path / "cwd"
    workdir.mkdir()
    monkeypatch.chdir(workdir)
    data = tmp_path / "data"
    assert cli.main(["analytics", "sql", "SELECT 1"]) == 0  # the datasets, caught up
    before = {p: p.stat().st_mtime_ns for p in data.rglob("*") if p.is_file()}
    capsys.readouterr()
    assert cli.main(["analytics", "sql", query]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and len(captured.err.strip().splitlines()) == 1, captured.err
    assert HOSTILE[query] in captured.err, captured.err
    assert list(workdir.iterdir()) == []
    after = {p: p.stat().st_mtime_ns for p in data.rglob("*") if p.is_file()}
    assert {p: t for p, t in after.items() if p.suffix == ".parquet"} == \
        {p: t for p, t in before.items() if p.suffix == ".parquet"}


def test_only_the_dataset_directory_is_readable(product_id: str, tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    datasets = tmp_path / "data" / "datasets"
    assert cli.main(["analytics", "sql", "SELECT 1"]) == 0  # writes the datasets
    inside = next(datasets.rglob("*.parquet"))
    query = f"SELECT count(*) AS n FROM read_parquet('{inside}')"
    assert cli.main(["analytics", "sql", query, "--json"]) == 0
    capsys.readouterr()
    for escape in (tmp_path / "data" / "ledger.sqlite", datasets / ".." / "ledger.sqlite"):
        assert cli.main(["analytics", "sql", f"SELECT * FROM read_blob('{escape}')"]) == 2
        assert "Permission Error" in capsys.readouterr().err


def test_a_query_over_the_time_limit_is_interrupted(tmp_path: Path) -> None:
    from analytics.sandbox import QueryRefused, SandboxLimits, run_query, sandboxed

    limits = SandboxLimits(seconds=0.2)
    con = sandboxed(tmp_path, limits)
    with pytest.raises(QueryRefused, match="interrupted after the 0.2s limit"):
        run_query(con, "SELECT count(*) FROM range(100000000000) a", limits)
    assert run_query(con, "SELECT 42 AS n", limits).to_pylist() == [{"n": 42}]


def test_chart_writes_a_png(product_id: str, tmp_path: Path,
                            capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "price.png"
    assert cli.main(["analytics", "chart", product_id, "-o", str(target)]) == 0
    assert target.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
    assert cli.main(["analytics", "chart", "not-a-product", "-o", str(target)]) == 2
    assert "no price observations" in capsys.readouterr().err


def test_report_is_self_contained_html(product_id: str, tmp_path: Path) -> None:
    target = tmp_path / "report.html"
    assert cli.main(["analytics", "report", "-o", str(target)]) == 0
    html = target.read_text()
    assert '<img src="data:image/png;base64,' in html
    assert "Blue Mug" in html and "Store summary" in html and "Crawl health" in html
    assert "http://" not in html and "https://" not in html.replace("https://shop.example", "")


def test_refresh_rebuild_and_shell(product_id: str, tmp_path: Path,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["analytics", "refresh"]) == 0
    assert "caught up" in capsys.readouterr().out
    assert cli.main(["analytics", "refresh", "--rebuild"]) == 0
    assert "rebuilt" in capsys.readouterr().out
    assert cli.main(["analytics", "shell"]) == 0
    out = capsys.readouterr().out
    views_sql = tmp_path / "data" / "datasets" / "views.sql"
    assert f'.read {views_sql.resolve()}' in out or f".read {views_sql}" in out
    assert "CREATE OR REPLACE VIEW price_changes" in views_sql.read_text()
