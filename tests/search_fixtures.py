"""A store whose catalog has products named for searching (product search tests)."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

from domain.values import CrawlSuccess, Observation, Offer
from ledger.bootstrap import Ledger

T0 = datetime(2026, 3, 1, 8, 0, tzinfo=UTC)
#: name, brand, category, description
Item = tuple[str, str, str, str | None]
PRODUCTS: list[Item] = [
    ("Blue Dream", "Jeeter", "Flower", None),
    ("Blueberry Kush", "Crème Farms", "Flower", "Sweet berry notes, a calm evening strain."),
    ("Dream Queen", "Kiva", "Edible", None),
    ("Sour Diesel Vape", "Stiiizy", "Vaporizer", "Citrus and fuel; made from Sour Diesel."),
    ("Blue Dream Blue Dream", "Jeeter", "Pre-roll", None),
]


def seeded(ledger: Ledger, products: list[Item] = PRODUCTS, store_name: str = "Green Leaf",
           host: str = "green.example") -> str:
    """Register a store with one catalog job and record `products` seen by it."""
    app = ledger.app
    store = app.register_store(name=store_name, base_url=f"https://{host}",
                               platform="shopify", now=T0)
    job = app.schedule_job(kind="catalog", url=f"https://{host}/products.json",
                           store_id=store, now=T0, every=3600)
    record(ledger, job, products, T0)
    return job


def record(ledger: Ledger, job: str, products: list[Item], now: datetime) -> None:
    lease = ledger.app.lease(job, "w", 60, now).lease_id
    seen = tuple(Observation(f"p{n}", name, (Offer("1g", Decimal("10"), "USD"),), "in_stock",
                             brand=brand, category=category, description=description)
                 for n, (name, brand, category, description) in enumerate(products))
    ledger.app.record_success(job, lease, CrawlSuccess(200, "u", "t", "1", str(now),
                                                       observations=seen), now)
    ledger.catch_up()
