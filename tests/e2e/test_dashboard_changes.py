"""The dashboard's changes page (`/changes`) on both backends, over HTTP: prices and
stock seeded through `record_success` on different days, then the sections' contents
and order, the period switch (counted from the ledger's latest crawl, not the wall
clock), the store and category filters, and the projection's rebuild."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import httpx
from test_api import serving

from domain.values import CrawlSuccess, Observation, Offer
from ledger.bootstrap import Ledger
from projections import read_models
from projections.changes import ChangeQueries, change_bp
from projections.rebuild import rebuild

T0 = datetime(2026, 3, 1, 8, 0, tzinfo=UTC)  # long before the wall clock
Seen = dict[str, tuple[str, str, str]]  # name -> (price, availability, category)


def crawl(ledger: Ledger, store: str, day: int, seen: Seen) -> None:
    at = T0 + timedelta(days=day)
    app = ledger.app
    job = str(app.schedule_job(kind="product_page", url=f"https://{store}.example/d{day}",
                               now=at, store_id=store))
    task = app.lease(job, "w", 300, at)
    app.record_success(job, task.lease_id, CrawlSuccess(
        200, task.url, "shopify", "shopify/1", f"h{store}{day}", observations=tuple(
            Observation(provider_product_id=name, name=name, url=task.url, category=category,
                        availability=availability, offers=(Offer("one", Decimal(price), "EUR"),))
            for name, (price, availability, category) in seen.items())), at)


def seeded(ledger: Ledger) -> tuple[str, str]:
    app = ledger.app
    shop, other = (str(app.register_store(name=name, base_url=f"https://{name.lower()}.example",
                                          platform="shopify", now=T0)) for name in ("Shop", "Other"))
    crawl(ledger, shop, 0, {"Alpha": ("10.00", "in_stock", "flower"),
                            "Bravo": ("20.00", "in_stock", "flower"),
                            "Charlie": ("50.00", "in_stock", "edibles"),
                            "Delta": ("8.00", "in_stock", "flower"),
                            "Echo": ("5.00", "in_stock", "flower")})
    crawl(ledger, other, 0, {"Foxtrot": ("100.00", "in_stock", "flower")})
    crawl(ledger, shop, 3, {"Alpha": ("8.00", "in_stock", "flower"),
                            "Bravo": ("25.00", "in_stock", "flower"),
                            "Charlie": ("50.00", "in_stock", "edibles"),
                            "Delta": ("8.00", "out_of_stock", "flower"),
                            "Echo": ("5.00", "out_of_stock", "flower")})
    crawl(ledger, shop, 8, {"Alpha": ("8.00", "in_stock", "flower"),
                            "Bravo": ("26.00", "in_stock", "flower"),
                            "Charlie": ("45.00", "in_stock", "edibles"),
                            "Delta": ("8.00", "out_of_stock", "flower"),
                            "Echo": ("5.00", "in_stock", "flower")})
    crawl(ledger, other, 8, {"Foxtrot": ("60.00", "in_stock", "flower")})
    ledger.catch_up()
    return shop, other


def sections(html: str) -> dict[str, list[str]]:
    """Each section's product names (link texts), in the page's order."""
    found = {}
    for kind, body in re.findall(r'<section id="changes-(\w+)">(.*?)</section>', html, re.S):
        found[kind] = re.findall(r'<a href="/products/[^"]+">([^<]+)</a>', body)
    return found


def test_changes_page_sections_period_and_filters_on_both_backends(ledger: Ledger) -> None:
    shop, _ = seeded(ledger)
    with serving(ledger) as (url, secrets), httpx.Client(base_url=url) as browser:
        assert browser.get("/changes").status_code == 303  # to the sign-in page
        browser.post("/login", data={"token": secrets["read"], "next": "/"})
        today = browser.get("/changes")
        assert today.status_code == 200
        assert sections(today.text) == {"drop": ["Foxtrot", "Charlie"], "rise": ["Bravo"],
                                        "back": ["Echo"], "gone": []}
        assert "€100.00 → €60.00" in today.text and "-40.0 %" in today.text
        assert '<a href="/changes" aria-current="page">Changes</a>' in today.text
        week = browser.get("/changes", params={"period": "7d"})
        assert sections(week.text) == {"drop": ["Foxtrot", "Alpha", "Charlie"],
                                       "rise": ["Bravo", "Bravo"], "back": ["Echo"],
                                       "gone": ["Delta", "Echo"]}
        assert "+25.0 %" in week.text and "feed_says" in week.text
        shop_today = browser.get("/changes", params={"store": shop})
        assert sections(shop_today.text)["drop"] == ["Charlie"]  # Foxtrot is in Other
        in_shop = browser.get("/changes", params={"period": "7d", "store": shop,
                                                  "category": "edibles"})
        assert sections(in_shop.text) == {"drop": ["Charlie"], "rise": [], "back": [],
                                          "gone": []}
        unknown = browser.get("/changes", params={"period": "forever"})
        assert sections(unknown.text) == sections(today.text)  # an unknown period is today


def test_changes_rebuild_to_the_same_rows(ledger: Ledger) -> None:
    seeded(ledger)
    queries = ChangeQueries(ledger.db)
    before = [queries.section(kind, "") for kind in ("drop", "rise", "back", "gone")]
    rebuild(ledger.source, ledger.db, read_models)  # dropped and replayed from the start
    after = [queries.section(kind, "") for kind in ("drop", "rise", "back", "gone")]
    assert before == after and len(before[0]) == 3
    assert queries.latest_at() == "2026-03-09T08:00:00.000000Z"


def test_change_in_basis_points() -> None:
    assert change_bp(Decimal("10.00"), Decimal("8.00")) == -2000
    assert change_bp(Decimal("3.00"), Decimal("4.00")) == 3333
