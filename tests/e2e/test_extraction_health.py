"""Extraction health on both backends: crawls recorded through the real record path give
each store's share of products with no price or a low-confidence one, in the read model,
the CLI table, the API's stores and `/metrics`; a rebuild gives the same figures."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path

import httpx
from test_api import bearer, serving

from domain.values import CrawlSuccess, Observation, Offer
from ledger.bootstrap import Ledger
from projections import read_models
from projections.rebuild import rebuild, verify

T0 = datetime(2026, 3, 1, 8, 0, tzinfo=UTC)


def _product(name: str, price: str | None, source: str | None = None) -> Observation:
    return Observation(provider_product_id=name, name=name,
                       offers=(Offer("one", Decimal(price) if price else None, "EUR"),),
                       attributes={"source.price": source} if source else {})


def _crawl(ledger: Ledger, store: str, path: str, minute: int, *seen: Observation) -> None:
    app, at = ledger.app, T0 + timedelta(minutes=minute)
    job = str(app.schedule_job(kind="product_page", url=f"https://{path}", now=at,
                               store_id=store))
    task = app.lease(job, "w", 300, at)
    app.record_success(job, task.lease_id, CrawlSuccess(
        200, task.url, "generic", "generic/1", f"h{minute}", observations=seen), at)


def seeded(ledger: Ledger) -> tuple[str, str]:
    app = ledger.app
    bad = str(app.register_store(name="Bad", base_url="https://bad.example",
                                 platform="generic", now=T0))
    good = str(app.register_store(name="Good", base_url="https://good.example",
                                  platform="shopify", now=T0))
    # Bad: 4 products over two crawls, one without a price, one from visible text only
    _crawl(ledger, bad, "bad.example/a", 1, _product("a", None), _product("b", "5.00"))
    _crawl(ledger, bad, "bad.example/b", 2, _product("c", "7.00", "visible"),
           _product("d", "8.00", "visible sale price beside the structured one"))
    _crawl(ledger, good, "good.example/a", 3, _product("e", "9.50"))
    # a crawl that saw no product (as outcomes from before the counts): not counted
    empty = str(app.register_store(name="Empty", base_url="https://empty.example",
                                   platform="generic", now=T0))
    _crawl(ledger, empty, "empty.example/a", 4)
    ledger.catch_up()
    return bad, good


def test_shares_in_the_read_model_api_and_metrics(ledger: Ledger) -> None:
    bad, good = seeded(ledger)
    rows = {r["store_id"]: r for r in ledger.read.stores()}
    assert rows[bad]["extraction_crawls"] == 2
    assert (rows[bad]["no_price_ratio"], rows[bad]["low_confidence_ratio"],
            rows[bad]["misses_ratio"]) == (0.25, 0.25, 0.5)
    assert (rows[good]["no_price_ratio"], rows[good]["misses_ratio"]) == (0.0, 0.0)
    empty = next(r for r in rows.values() if r["name"] == "Empty")
    assert (empty["extraction_crawls"], empty["misses_ratio"]) == (None, None)
    with serving(ledger) as (url, secrets), httpx.Client(base_url=url) as client:
        headers = bearer(secrets["read"])
        items = client.get("/api/v1/stores", headers=headers).json()
        items = items.get("items", items) if isinstance(items, dict) else items
        assert {i["name"]: i["misses_ratio"] for i in items} == {"Bad": 0.5, "Good": 0.0,
                                                                  "Empty": None}
        shown = client.get(f"/api/v1/stores/{bad}", headers=headers).json()
        assert shown["status"]["no_price_ratio"] == 0.25
        metrics = client.get("/metrics", headers=headers).text
    assert f'crawl_ledger_store_extraction_misses_ratio{{store="{bad}"}} 0.5' in metrics
    assert f'crawl_ledger_store_extraction_misses_ratio{{store="{good}"}} 0.0' in metrics
    assert metrics.count("crawl_ledger_store_extraction_misses_ratio{") == 2  # none for Empty


def test_stores_list_shows_the_shares_and_rebuild_verifies(
        ledger: Ledger, store_url: str, tmp_path: Path, crawl_ledger_bin: str,
        cli_env: Callable[..., dict[str, str]]) -> None:
    bad, good = seeded(ledger)
    env = cli_env(tmp_path / "data", LEDGER_STORE=store_url)

    def run(*argv: str) -> str:
        done = subprocess.run([crawl_ledger_bin, *argv], env=env, capture_output=True,
                              text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        return done.stdout

    table = run("stores", "list").splitlines()  # a title, the header, a rule, the rows
    assert "no price %" in table[1] and "low conf %" in table[1]
    lines = {line.split()[1]: line.split() for line in table[3:] if line.strip()}
    assert lines["Bad"][5:7] == ["25", "25"] and lines["Good"][5:7] == ["0", "0"]
    assert lines["Empty"][5:7] == ["-", "-"]
    listed = {s["id"]: s for s in json.loads(run("stores", "list", "--json"))}
    assert listed[bad]["misses_ratio"] == 0.5 and listed[good]["misses_ratio"] == 0.0
    run("projections", "rebuild", "--verify")
    rebuilt = {s["id"]: s for s in json.loads(run("stores", "list", "--json"))}
    assert rebuilt == listed


def test_rebuild_gives_the_same_figures(ledger: Ledger) -> None:
    bad, _ = seeded(ledger)
    before = ledger.read.stores()
    assert next(r for r in before if r["store_id"] == bad)["misses_ratio"] == 0.5
    comparisons = verify(ledger.source, ledger.db, read_models)
    assert "store_extraction" in {c.table for c in comparisons}
    assert all(c.equal for c in comparisons)
    rebuild(ledger.source, ledger.db, read_models)  # dropped and replayed from the start
    assert ledger.read.stores() == before


def test_a_redelivered_success_changes_nothing(ledger: Ledger) -> None:
    bad, _ = seeded(ledger)
    projection = next(p for p in read_models() if p.name == "extraction_health")
    events = ledger.source.read(0, 10_000)
    with ledger.db.transaction() as tx:
        projection.apply(tx, events)  # every event once more, past the tracked position
    row = next(r for r in ledger.read.stores() if r["store_id"] == bad)
    assert row["extraction_crawls"] == 2 and row["misses_ratio"] == 0.5
