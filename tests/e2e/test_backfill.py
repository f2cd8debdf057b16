"""`crawl-ledger extract backfill`: the current extractor over archived pages, no
recrawl. A dry run shows old → new and records nothing; a run records one
`Product.Reextracted` per product read differently (with the extractor version and
the page's hash) and keeps the products' current state; a second run records nothing."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from backends import LOOPBACK_ENV

from domain.values import CrawlSuccess, Observation, Offer
from eventstore.pack_index import open_pack_index
from ledger.bootstrap import bootstrap
from ledger.cli import main
from ledger.settings import Settings
from workers.archive.raw_archive import RawArchive

T0 = datetime(2026, 3, 1, 8, 0, tzinfo=UTC)
SALE = """<html lang="it-IT"><head><script type="application/ld+json">
{"@type": "Product", "name": "Lampada", "sku": "L1", "offers": {"@type": "Offer",
 "price": "18.00", "availability": "https://schema.org/InStock"}}
</script></head><body><h1>Lampada</h1><div class="price"><del>€ 18,00</del>
<span class="price-now">€ 17,10</span></div></body></html>"""
BARE = """<html lang="it-IT"><body><h1 class="product-title">Sedia</h1>
<span class="price">€ 42,00</span><p class="availability">Disponibile</p>
<button>Aggiungi al carrello</button></body></html>"""


def record(data_dir: Path) -> str:
    ledger = bootstrap(Settings.from_env({**LOOPBACK_ENV, "LEDGER_DATA_DIR": str(data_dir)}))
    try:
        app, archive = ledger.app, RawArchive(data_dir, open_pack_index)
        store = app.register_store(name="Negozio", base_url="https://negozio.example",
                                   platform="generic", now=T0)
        # what an older extractor recorded: the lamp without its sale or currency (its
        # JSON-LD names neither), the chair (no structured data) not at all
        pages = [("lampada", SALE, (Observation("L1", "Lampada", offers=(
                     Offer("default", Decimal("18.00"), None),), availability="in_stock"),)),
                 ("sedia", BARE, ())]
        for n, (slug, html, seen) in enumerate(pages):
            url = f"https://negozio.example/{slug}"
            job = app.schedule_job(kind="product_page", url=url, now=T0, store_id=store)
            lease = app.lease(job, "w1", 300, T0 + timedelta(minutes=n)).lease_id
            ref = archive.put(html.encode())
            app.record_success(job, lease, CrawlSuccess(
                200, url, "schema_org", "schema_org/1", ref, raw_ref=ref, observations=seen),
                T0 + timedelta(minutes=n))
        return str(store)
    finally:
        ledger.close()


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[list[dict[str, Any]], str]:
    capsys.readouterr()
    assert main(["extract", "backfill", *argv, "--json"]) == 0
    out, err = capsys.readouterr()
    return json.loads(out), err


def events(capsys: pytest.CaptureFixture[str]) -> list[dict[str, Any]]:
    capsys.readouterr()
    assert main(["events", "tail", "--json"]) == 0
    return [json.loads(line) for line in capsys.readouterr().out.splitlines()]


def test_backfill_records_what_the_current_extractor_reads_once(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "data"
    store = record(data)
    monkeypatch.setenv("LEDGER_DATA_DIR", str(data))
    monkeypatch.delenv("LEDGER_STORE", raising=False)
    before = events(capsys)

    planned, err = run(capsys, "--dry-run")
    assert "would record 2" in err and events(capsys) == before
    by_name = {row["name"]: row for row in planned}
    assert by_name["Lampada"]["old"] == "default: 18 ?; in_stock"
    assert by_name["Lampada"]["new"] == "default: 18/17.1 EUR; in_stock"
    assert by_name["Sedia"]["old"] == "not found"
    assert by_name["Sedia"]["new"] == "default: 42 EUR; in_stock"

    recorded, err = run(capsys, "--store", store)
    assert "recorded 2" in err
    new = [e for e in events(capsys) if e["position"] > before[-1]["position"]]
    reextracted = [e for e in new if e["event_type"] == "Product.Reextracted"]
    assert len(reextracted) == 2
    assert {e["payload"]["extractor_version"] for e in reextracted} == {"schema_org/3"}
    assert all(e["payload"]["raw_ref"].startswith("sha256:") for e in reextracted)
    assert [e["event_type"] for e in new].count("Product.Discovered") == 1  # the chair

    again, err = run(capsys)
    assert again == [] and "recorded 0" in err

    capsys.readouterr()
    assert main(["products", "list", "--json"]) == 0
    lamp = next(p for p in json.loads(capsys.readouterr().out) if p["name"] == "Lampada")
    assert "17.1" not in json.dumps(lamp)  # the current state is the last sighting's


def test_backfill_refuses_bad_options_in_one_line(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("LEDGER_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.delenv("LEDGER_STORE", raising=False)
    assert main(["stores", "add", "Shop", "https://shop.example", "--platform", "shopify"]) == 0
    for argv, reason in ((["--since", "yesterday"], "not an ISO 8601 time"),
                         (["--store", "nope"], "unknown store id")):
        capsys.readouterr()
        assert main(["extract", "backfill", *argv]) == 2
        err = capsys.readouterr().err
        assert len(err.strip().splitlines()) == 1 and reason in err, err
