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
    assert "│ 4 │" in out


def test_bad_sql_prints_duckdbs_message_only(product_id: str,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["analytics", "sql", "SELEC 1"]) != 0
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith("Parser Error: syntax error at or near \"SELEC\"")
    assert cli.main(["analytics", "sql", "SELECT * FROM no_such_view"]) == 1
    assert "Catalog Error" in capsys.readouterr().err


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
