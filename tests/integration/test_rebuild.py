"""Rebuilding every read model from position 0 gives exactly the live rows, on both
backends, after a scripted history of more than a thousand events."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest

from domain.values import CrawlFailure, CrawlSuccess, Observation, Offer
from ledger.bootstrap import Ledger
from ledger.cli import main
from projections import read_models
from projections.framework import table_rows

T0 = datetime(2026, 3, 1, 6, 0, tzinfo=UTC)
STORES, PRODUCTS, CYCLES = 3, 30, 10


def live_tables(ledger: Ledger) -> dict[str, list[dict[str, Any]]]:
    return {t.name: table_rows(ledger.db, t, "") for p in read_models() for t in p.tables}


class Script:
    """Several stores with catalog jobs crawled over many cycles: price changes,
    misses and out-of-stock, store-says-out, failures with retries, pauses."""

    def __init__(self, ledger: Ledger) -> None:
        self.app = ledger.app
        self.now = T0
        self.jobs: list[UUID] = []
        for s in range(STORES):
            store = self.app.register_store(name=f"Store {s}", base_url=f"https://s{s}.example",
                                            platform="shopify", now=T0, crawl_delay=s + 1)
            self.jobs.append(self.app.schedule_job(
                kind="catalog", url=f"https://s{s}.example/products.json", now=T0,
                store_id=store, every=3600, priority=s))
            page = self.app.schedule_job(kind="product_page", url=f"https://s{s}.example/p/0",
                                         now=T0, store_id=store)
            self.crawl(page, s, 0)

    def lease(self, job_id: UUID) -> str:
        self.now = max(self.now, self.app.get_job(job_id).next_run_at) + timedelta(seconds=1)
        return self.app.lease(job_id, "worker", 600, self.now).lease_id

    def crawl(self, job_id: UUID, s: int, cycle: int) -> None:
        observations = tuple(self.observe(s, p, cycle) for p in range(PRODUCTS)
                             if not (p % 7 == s and 3 <= cycle <= 6)
                             and not (p == PRODUCTS - 2 and cycle >= 6))
        outcome = CrawlSuccess(200, f"https://s{s}.example/", "test", "1", f"{s}:{cycle // 2}",
                               pages=2, observations=observations)
        self.app.record_success(job_id, self.lease(job_id), outcome, self.now)

    @staticmethod
    def observe(s: int, p: int, cycle: int) -> Observation:
        price = Decimal(10 + p) + Decimal("0.50") * (cycle // 3)
        special = price - 1 if (p + cycle) % 5 == 0 else None
        availability = "out_of_stock" if p == PRODUCTS - 1 and cycle in (4, 5) else "in_stock"
        return Observation(f"sku-{p}", f"Product {p}", (
            Offer("1g", price, "USD", special_price=special),
            Offer("3.5g", price * 3, "USD"),
        ), availability=availability, brand=f"Brand {p % 4}", category="flower")

    def run(self) -> None:
        for cycle in range(CYCLES):
            for s, job_id in enumerate(self.jobs):
                if cycle % 4 == 2 and s == 1:
                    self.app.record_failure(job_id, self.lease(job_id),
                                            CrawlFailure("http_5xx", "503", True), self.now)
                if cycle == 5 and s == 2:
                    self.app.pause(job_id, self.now)
                    self.app.resume(job_id, self.now + timedelta(minutes=30))
                self.crawl(job_id, s, cycle)


@pytest.fixture
def scripted(ledger: Ledger, store_url: str, tmp_path: Path,
             monkeypatch: pytest.MonkeyPatch) -> Ledger:
    Script(ledger).run()
    assert (ledger.app.recorder.max_notification_id() or 0) >= 1000, "the script is too short"
    ledger.catch_up()
    monkeypatch.setenv("LEDGER_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("LEDGER_STORE", store_url)
    return ledger


def test_rebuild_equals_live_and_verify_catches_tampering(
        scripted: Ledger, capsys: pytest.CaptureFixture[str]) -> None:
    live = live_tables(scripted)
    assert len(live["current_products"]) == STORES * PRODUCTS
    stock = live["stock_status"]
    assert {r["reason"] for r in stock if r["status"] == "out_of_stock"} == {"misses"}
    assert sum(r["times_out"] for r in stock) > STORES  # also went out and came back

    assert main(["projections", "rebuild", "--verify"]) == 0
    out = capsys.readouterr().out
    assert ("verified: the live read models and the rebuild from the latest checkpoint equal "
            "a replay from position 0") in out
    assert "MISMATCH" not in out
    assert live_tables(scripted) == live  # verifying leaves the live models alone

    assert main(["projections", "rebuild"]) == 0
    assert f"from position 0: {scripted.source.head()} events replayed" in capsys.readouterr().out
    assert live_tables(scripted) == live

    # a live row gone wrong, then captured by a checkpoint: --verify names it in the live
    # models and in the rebuild from the checkpoint
    with scripted.db.transaction() as tx:
        tx.execute("UPDATE current_products SET min_price = '0.01' WHERE provider_product_id = ?",
                   ("sku-3",))
        wrong = tx.execute("SELECT product_id FROM current_products WHERE min_price = '0.01'")
    assert len(wrong) == STORES
    assert main(["projections", "checkpoint"]) == 0
    assert main(["projections", "rebuild", "--verify"]) == 1
    out = capsys.readouterr().out
    assert "MISMATCH" in out
    first = min(r["product_id"] for r in wrong)
    assert f"current_products differs at {first}" in out
    assert f"current_products (from checkpoint 1) differs at {first}" in out
    assert main(["projections", "rebuild", "--from-zero"]) == 0
    assert live_tables(scripted) == live
