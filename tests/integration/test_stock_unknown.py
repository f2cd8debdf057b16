"""Stock "unknown" when we cannot see, on both backends: when the crawls that see a
store's products keep failing, their stock becomes unknown (an event naming the
failing job as evidence) instead of staying silently stale, and the next good
crawl makes it known again."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal
from uuid import UUID

from domain import ids
from domain.crawl_job import RetryPolicy
from domain.product import FAILURES_FOR_UNKNOWN_STOCK
from domain.values import CrawlFailure, CrawlSuccess, Observation, Offer
from ledger.bootstrap import Ledger

T0 = datetime(2026, 3, 1, 8, 0, tzinfo=UTC)


def good(*availability: str) -> CrawlSuccess:
    observations = tuple(Observation(f"p{i}", f"Product {i}", (Offer("1", Decimal("9.50"), "EUR"),),
                                     availability=a) for i, a in enumerate(availability))
    return CrawlSuccess(200, "https://shop.example/products.json", "test", "1", "c",
                        observations=observations)


def run(ledger: Ledger, job_id: UUID, now: datetime, outcome: CrawlSuccess | CrawlFailure) -> None:
    lease = ledger.app.lease(job_id, "w1", 300, now).lease_id
    if isinstance(outcome, CrawlSuccess):
        ledger.app.record_success(job_id, lease, outcome, now)
    else:
        ledger.app.record_failure(job_id, lease, outcome, now)


def product_events(ledger: Ledger, store_id: UUID) -> list[tuple[str, str, dict[str, object]]]:
    wanted = {str(ids.product_id(str(store_id), f"p{i}")) for i in range(2)}
    return [(e.stream_id, e.event_type, e.payload) for e in ledger.source.read(0, 10_000)
            if e.stream_id in wanted]


def test_failing_crawls_make_stock_unknown_until_a_good_crawl(ledger: Ledger) -> None:
    app = ledger.app
    store_id = app.register_store(name="Shop", base_url="https://shop.example", platform="shopify",
                                  now=T0)
    job_id = app.schedule_job(kind="catalog", url="https://shop.example/products.json", now=T0,
                              store_id=store_id, every=3600, adaptive=False,
                              retry_policy=RetryPolicy(max_attempts=20, backoff_base=0, backoff_cap=0))
    run(ledger, job_id, T0, good("in_stock", "out_of_stock"))
    failure = CrawlFailure("http_5xx", "503 from the shop", retryable=True)
    now = T0 + timedelta(hours=1) - timedelta(minutes=1)
    for _ in range(FAILURES_FOR_UNKNOWN_STOCK + 2):  # two more than the limit: no repeats
        now += timedelta(minutes=1)
        run(ledger, job_id, now, failure)
    unknown = [(s, p) for s, t, p in product_events(ledger, store_id) if t == "Product.StockUnknown"]
    assert len(unknown) == 2 and {s for s, _ in unknown} == \
        {str(ids.product_id(str(store_id), f"p{i}")) for i in range(2)}
    for _, payload in unknown:
        assert payload["job_id"] == str(job_id)
        assert payload["consecutive_failures"] == FAILURES_FOR_UNKNOWN_STOCK
        assert "http_5xx" in str(payload["last_error"])
    ledger.catch_up()
    assert {r["availability"] for r in ledger.read.products(store_id=str(store_id))} == {"unknown"}
    # readers are not told "in stock" while the store's stock cannot be seen; the product
    # last seen out of stock stays out
    stock = {r["provider_product_id"]: r["in_stock"]
             for r in ledger.read.products(store_id=str(store_id))}
    assert stock == {"p0": None, "p1": False}
    statuses = ledger.db.query("SELECT status FROM stock_status")
    assert {r["status"] for r in statuses} == {"unknown"}

    run(ledger, job_id, now + timedelta(minutes=1), good("in_stock", "out_of_stock"))
    known = [p for _, t, p in product_events(ledger, store_id) if t == "Product.StockKnown"]
    assert sorted((p["availability"], p["in_stock"]) for p in known) == \
        [("in_stock", True), ("out_of_stock", False)]
    ledger.catch_up()
    rows = {r["provider_product_id"]: r["availability"]
            for r in ledger.read.products(store_id=str(store_id))}
    assert rows == {"p0": "in_stock", "p1": "out_of_stock"}
    assert {r["provider_product_id"]: r["in_stock"]
            for r in ledger.read.products(store_id=str(store_id))} == {"p0": True, "p1": False}
    statuses = ledger.db.query("SELECT status FROM stock_status ORDER BY status")
    assert [r["status"] for r in statuses] == ["in_stock", "out_of_stock"]
    assert ledger.runner().catch_up() == 0  # nothing new; a rebuild is checked elsewhere


def test_a_failing_job_that_has_seen_nothing_records_no_stock_events(ledger: Ledger) -> None:
    app = ledger.app
    job_id = app.schedule_job(kind="catalog", url="https://shop.example/products.json", now=T0,
                              every=3600, retry_policy=RetryPolicy(20, 0, 0))
    for minute in range(FAILURES_FOR_UNKNOWN_STOCK + 1):
        run(ledger, job_id, T0 + timedelta(minutes=minute), CrawlFailure("timeout", "t", True))
    assert not [e for e in ledger.source.read(0, 10_000) if e.stream_type == "Product"]
