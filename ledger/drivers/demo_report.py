"""What the demo prints and draws: a summary of the ledger and a price-history chart."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from domain.envelope import Envelope
from domain.sightings import RECORDED
from runtime.ledger import Ledger


def all_envelopes(ledger: Ledger, batch: int = 5000) -> Iterator[Envelope]:
    position = 0
    while True:
        envelopes = ledger.source.read(position, batch)
        yield from envelopes
        if len(envelopes) < batch:
            return
        position = envelopes[-1].position


@dataclass
class Summary:
    events: int = 0
    by_type: Counter[str] = field(default_factory=Counter)
    failures: Counter[str] = field(default_factory=Counter)
    stores: int = 0
    products: int = 0
    jobs: int = 0
    #: observations that changed nothing, in the crawls' `Sightings.Recorded` events
    sighted: int = 0

    @property
    def runs(self) -> int:
        return sum(self.by_type[f"CrawlJob.{k}"] for k in ("Succeeded", "Failed", "LeaseExpired"))

    def rows(self) -> list[tuple[str, Any]]:
        t = self.by_type
        return [
            ("stores discovered", self.stores),
            ("jobs (runs)", f"{self.jobs} ({self.runs} runs: {t['CrawlJob.Succeeded']} ok,"
                            f" {t['CrawlJob.Failed']} failed)"),
            ("events recorded", self.events),
            ("products", self.products),
            ("observations", t["Product.Observed"] + self.sighted),
            ("price changes", t["Product.PriceChanged"]),
            ("misses", t["Product.Missed"]),
            ("went out of stock", t["Product.WentOutOfStock"]),
            ("back in stock", t["Product.BackInStock"]),
            ("failures by kind", ", ".join(f"{k} {v}" for k, v in self.failures.most_common())
             or "none"),
        ]


def summarize(envelopes: Iterable[Envelope]) -> Summary:
    summary = Summary()
    for env in envelopes:
        summary.events += 1
        summary.by_type[env.event_type] += 1
        if env.event_type == "CrawlJob.Failed":
            summary.failures[env.payload["error_kind"]] += 1
        elif env.event_type == "CrawlJob.LeaseExpired":
            summary.failures["lease_expired"] += 1
        elif env.event_type == RECORDED:
            summary.sighted += len(env.payload["products"])
    summary.stores = summary.by_type["Store.Registered"]
    summary.products = summary.by_type["Product.Discovered"]
    summary.jobs = summary.by_type["CrawlJob.Scheduled"]
    return summary


def top_movers(ledger: Ledger, top: int = 4) -> list[str]:
    """Products whose prices changed most (then: most out-of-stock periods)."""
    stock = {r["product_id"]: r["times_out"] or 0 for r in ledger.read.stock_status()}
    products = ledger.read.products()
    ranked = sorted(products, key=lambda r: (-(r["price_changes"] or 0) - stock.get(
        r["product_id"], 0), r["product_id"]))
    return [r["product_id"] for r in ranked[:top]]


def draw_chart(ledger: Ledger, path: Path, top: int = 4) -> list[str]:
    """Write the ledger to the Parquet datasets, then chart the top movers from DuckDB."""
    from analytics import connect
    from analytics.charts import chart_products
    from projections.datasets import DatasetWriter

    writer = DatasetWriter(ledger.data_dir, ledger.source, ledger.tables.dataset_manifests)
    writer.catch_up()
    ids = top_movers(ledger, top)
    con = connect(writer.root)
    try:
        chart_products(con, ids, path)
    finally:
        con.close()
    return [ledger.read.product(i)["name"] for i in ids]  # type: ignore[index]
