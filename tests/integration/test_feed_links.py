"""Feed links on both backends: a link to a registered store's origin becomes a product-page
job of that store; links to origins where no store is registered are not crawled, and the
feed's result says how many and which origins (they are not dropped without a word), and
`jobs show` and the dashboard's timeline say so."""

from __future__ import annotations

from datetime import UTC, datetime

from api.event_rows import timeline_row
from domain.values import CrawlSuccess
from ledger.bootstrap import Ledger
from ledger.cli.history import describe
from runtime.history import stream_history

T0 = datetime(2026, 3, 1, 8, 0, tzinfo=UTC)


def test_links_to_unregistered_origins_are_counted_in_the_feeds_result(ledger: Ledger) -> None:
    app = ledger.app
    app.register_store(name="Known", base_url="https://known.example", platform="shopify", now=T0)
    feed = app.schedule_job(kind="feed", url="https://news.example/rss.xml", now=T0, every=3600)
    links = ("https://known.example/products/a", "https://known.example/products/b",
             "https://other.example/p/1", "https://other.example/p/2", "https://third.example/x")
    lease = app.lease(feed, "w1", 300, T0).lease_id
    app.record_success(feed, lease, CrawlSuccess(200, "https://news.example/rss.xml", "feed",
                                                 "1", "h", links=links), T0)

    envelopes = ledger.source.read(0, 10_000)
    succeeded = [e for e in envelopes if e.event_type == "CrawlJob.Succeeded"]
    assert len(succeeded) == 1
    assert succeeded[0].payload["outcome"]["no_store"] == {
        "links": 3, "origins": ["https://other.example", "https://third.example"]}
    children = [e.payload["url"] for e in envelopes if e.event_type == "CrawlJob.Scheduled"
                and e.payload.get("kind") == "product_page"]
    assert sorted(children) == list(links[:2])


def test_jobs_show_names_the_origins_with_no_store(ledger: Ledger) -> None:
    feed = ledger.app.schedule_job(kind="feed", url="https://news.example/rss.xml", now=T0,
                                   every=3600)
    lease = ledger.app.lease(feed, "w1", 300, T0).lease_id
    ledger.app.record_success(feed, lease, CrawlSuccess(
        200, "https://news.example/rss.xml", "feed", "1", "h",
        links=("https://other.example/p/1",)), T0)
    succeeded = next(e for e in stream_history(ledger, feed)
                     if e.event_type == "CrawlJob.Succeeded")
    assert describe(succeeded).endswith(
        "; 1 link(s) to origins with no registered store, not crawled (https://other.example)")
    assert timeline_row(succeeded)["reason"] == \
        "1 link(s) to origins with no registered store, not crawled: https://other.example"
