"""The dashboard's table queries on both backends: a product name or job URL filter in
any case, a price-bounded product page in name order (ids and prices first, the page's
rows after), and the overview's runs per hour grouped in SQL with the overdue apart."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

from domain.values import CrawlSuccess, Observation, Offer
from ledger.bootstrap import Ledger
from projections.dashboard import OVERDUE, DashboardQueries

T0 = datetime(2026, 3, 1, 8, 0, tzinfo=UTC)
PRICES = {"Alpha Kush": "8.00", "Bravo Haze": "12.00", "Charlie": "7.50", "Delta": "9.00",
          "Echo Alpha": "20.00"}


def seeded(ledger: Ledger) -> str:
    app = ledger.app
    store = str(app.register_store(name="Shop", base_url="https://shop.example",
                                   platform="shopify", now=T0))
    job = str(app.schedule_job(kind="catalog", url="https://Shop.example/Menu", now=T0,
                               store_id=store, every=3600))
    task = app.lease(job, "w", 300, T0)
    app.record_success(job, task.lease_id, CrawlSuccess(
        200, task.url, "shopify", "shopify/1", "h", observations=tuple(
            Observation(provider_product_id=name, name=name, url=task.url,
                        offers=(Offer("one", Decimal(price), "EUR"),))
            for name, price in PRICES.items())), T0)
    for hours in (-2, 1, 1.5, 3):  # one overdue, two at 09:xx, one at 11:00
        app.schedule_job(kind="product_page", url=f"https://shop.example/p{hours}", now=T0,
                         store_id=store, start_at=T0 + timedelta(hours=hours))
    ledger.catch_up()
    return store


def names(rows: list[dict[str, object]]) -> list[object]:
    return [r["name"] for r in rows]


def test_dashboard_queries_on_both_backends(ledger: Ledger) -> None:
    seeded(ledger)
    queries = DashboardQueries(ledger.db)
    rows, total = queries.product_table(text="ALPHA")
    assert names(rows) == ["Alpha Kush", "Echo Alpha"] and total == 2  # any case
    rows, total = queries.product_table(text="50%")  # a LIKE wildcard is a character
    assert rows == [] and total == 0
    rows, total = queries.product_table(text="a", offset=1, limit=2)
    assert names(rows) == ["Bravo Haze", "Charlie"] and total == 5
    rows, total = queries.product_table(text="A", sort="min_price")
    assert names(rows) == ["Charlie", "Alpha Kush", "Delta", "Bravo Haze", "Echo Alpha"]
    rows, total = queries.product_table(min_price=Decimal("7.50"), max_price=Decimal("12"))
    assert names(rows) == ["Alpha Kush", "Bravo Haze", "Charlie", "Delta"] and total is None
    rows, _ = queries.product_table(min_price=Decimal("7.50"), max_price=Decimal("12"),
                                    offset=1, limit=2)
    assert names(rows) == ["Bravo Haze", "Charlie"]
    assert queries.product_table(min_price=Decimal("100"))[0] == []
    jobs, count = queries.job_table(text="shop.EXAMPLE/menu")
    assert count == 1 and jobs[0]["url"] == "https://Shop.example/Menu"
    upcoming = queries.upcoming(T0 + timedelta(minutes=30), hours=4)
    # the catalog job ran at T0 and is due again at 09:00; the page due at 06:00 is overdue
    assert upcoming == [(OVERDUE, 1), ("2026-03-01T09", 3), ("2026-03-01T11", 1)]
