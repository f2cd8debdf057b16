"""A store whose catalog has products named for searching (product search tests)."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

from domain.values import CrawlSuccess, Observation, Offer
from ledger.bootstrap import Ledger

T0 = datetime(2026, 3, 1, 8, 0, tzinfo=UTC)
PRODUCTS = [("Blue Dream", "Jeeter", "Flower"), ("Blueberry Kush", "Crème Farms", "Flower"),
            ("Dream Queen", "Kiva", "Edible"), ("Sour Diesel Vape", "Stiiizy", "Vaporizer"),
            ("Blue Dream Blue Dream", "Jeeter", "Pre-roll")]


def seeded(ledger: Ledger, products: list[tuple[str, str, str]] = PRODUCTS,
           store_name: str = "Green Leaf") -> str:
    app = ledger.app
    store = app.register_store(name=store_name, base_url="https://green.example",
                               platform="shopify", now=T0)
    job = app.schedule_job(kind="catalog", url="https://green.example/products.json",
                           store_id=store, now=T0, every=3600)
    record(ledger, job, products, T0)
    return job


def record(ledger: Ledger, job: str, products: list[tuple[str, str, str]],
           now: datetime) -> None:
    lease = ledger.app.lease(job, "w", 60, now).lease_id
    seen = tuple(Observation(f"p{n}", name, (Offer("1g", Decimal("10"), "USD"),), "in_stock",
                             brand=brand, category=category)
                 for n, (name, brand, category) in enumerate(products))
    ledger.app.record_success(job, lease, CrawlSuccess(200, "u", "t", "1", str(now),
                                                       observations=seen), now)
    ledger.catch_up()
