"""Task chaining end to end: one store-locator job finds everything else.

locator -> stores + entry points (dispensaries) or catalogs -> catalogs -> products,
each child linked to its parent (`parent_job` in the job-status read model) and
ranked above it (child priority = parent priority + 10); an operator's force-run
ranks a job above all of them. Feeds create one product-page job per normalised
URL, however often and in however many feeds (with whatever tracking parameters)
the link appears.
"""

from __future__ import annotations

import html
import re
from collections import Counter
from collections.abc import Callable
from datetime import datetime
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx
import pytest

from domain.chaining import CHAIN_PRIORITY_BOOST
from ledger.drivers.demo import DemoConfig

CONFIG = DemoConfig(stores=5, cycles=1, seed=11, fault_rate=0.0)
DAY = 86400
FEEDS = ("rss.xml", "atom.xml", "social.json")


def _by_kind(rows: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    kinds: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        kinds.setdefault(row["kind"], []).append(row)
    return kinds


@pytest.fixture(scope="module")
def chained(demo_harness: Callable[..., Any]) -> Any:
    """One locator job, crawled until idle at epoch 0."""
    harness = demo_harness(CONFIG)
    harness.ledger.app.schedule_job(kind="store_discovery", url=harness.sim.urls.locator_url,
                                    every=DAY, now=harness.clock.now())
    harness.sim.simulator.set_epoch(0)
    harness.until_idle()
    harness.ledger.catch_up()
    return harness


def test_locator_finds_stores_entry_points_catalogs_and_products(chained: Any) -> None:
    read, sim = chained.ledger.read, chained.sim
    stores = {row["base_url"]: row["store_id"] for row in read.stores()}
    assert sorted(stores) == sorted(s.base_url for s in sim.urls.stores)
    truth = sim.simulator.truth(0)["stores"]
    for served in sim.urls.stores:
        products = read.products(store_id=stores[served.base_url])
        assert sorted(p["provider_product_id"] for p in products) == sorted(
            truth[served.key]["products"]), served.key


def test_children_link_to_their_parent_one_priority_step_up(chained: Any) -> None:
    read, sim = chained.ledger.read, chained.sim
    kinds = _by_kind(read.jobs())
    (locator,) = kinds["store_discovery"]
    assert (locator["parent_job"], locator["priority"]) == (None, 0)
    assert locator["children"] == CONFIG.stores
    store_of = {row["store_id"]: row["base_url"] for row in read.stores()}
    served = {s.base_url: s for s in sim.urls.stores}
    entry_points = {store_of[j["store_id"]]: j for j in kinds["entry_point"]}
    catalogs = {store_of[j["store_id"]]: j for j in kinds["catalog"]}
    assert sorted(entry_points) == sorted(u for u, s in served.items() if s.platform == "dispensary")
    assert sorted(catalogs) == sorted(served)
    step = CHAIN_PRIORITY_BOOST
    for url, entry in entry_points.items():
        assert (entry["parent_job"], entry["priority"]) == (locator["job_id"], step)
        assert entry["state"] == "completed" and entry["url"] == served[url].entry_url
        catalog = catalogs[url]
        assert (catalog["parent_job"], catalog["priority"]) == (entry["job_id"], 2 * step)
    for url, catalog in catalogs.items():
        if url not in entry_points:
            assert (catalog["parent_job"], catalog["priority"]) == (locator["job_id"], step)
            assert catalog["url"] == served[url].entry_url
        assert catalog["last_status"] == "succeeded"


def test_force_run_ranks_a_job_above_every_chained_one(chained: Any) -> None:
    ledger, clock = chained.ledger, chained.clock
    clock.advance(CONFIG.cycle_seconds)  # every catalog is due again
    now = clock.now()
    due = ledger.read.due_jobs(now)
    lowest = min((r for r in due if r["kind"] == "catalog"), key=lambda r: (r["priority"], r["job_id"]))
    assert lowest["priority"] < max(r["priority"] for r in due), "need a higher-ranked rival"
    ledger.app.force_run(lowest["job_id"], now)
    ledger.catch_up()
    forced = ledger.read.job(lowest["job_id"])
    assert forced is not None and forced["boost"] > 0
    ranked = ledger.read.due_jobs(now)
    assert ranked[0]["job_id"] == lowest["job_id"]
    assert all(forced["priority"] + forced["boost"] > r["priority"] + r["boost"]
               for r in ranked[1:])
    chained.until_idle()
    first = next(e for e in chained.envelopes()
                 if e.event_type == "CrawlJob.Dispatched" and e.payload["at"] == _iso(now))
    assert first.stream_id == lowest["job_id"]
    after = ledger.read.job(lowest["job_id"])
    assert after is not None and after["boost"] == 0 and after["last_status"] == "succeeded"


def _iso(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _raw_feed_links(control_url: str) -> dict[str, set[str]]:
    """Clean product URL -> every raw form (with tracking parameters) the feeds carry."""
    forms: dict[str, set[str]] = {}
    with httpx.Client(timeout=10) as client:
        for feed in FEEDS:
            text = html.unescape(client.get(f"{control_url}/feeds/{feed}").text)
            for link in re.findall(r"http://127\.0\.0\.1:\d+/products/[^\"<\s]+", text):
                clean = urlunsplit(urlsplit(link)._replace(query=""))
                forms.setdefault(clean, set()).add(link)
    return forms


def _product_page_jobs(harness: Any) -> Counter[str]:
    return Counter(e.payload["url_norm"] for e in harness.envelopes()
                   if e.event_type == "CrawlJob.Scheduled" and e.payload["kind"] == "product_page")


def test_feeds_seen_twice_create_each_product_page_job_once(
        demo_harness: Callable[..., Any]) -> None:
    harness = demo_harness(CONFIG)
    app, urls = harness.ledger.app, harness.sim.urls
    app.schedule_job(kind="store_discovery", url=urls.locator_url, every=DAY,
                     now=harness.clock.now())
    harness.until_idle()  # the stores exist before any feed names their products
    forms = _raw_feed_links(urls.control_url)
    assert any(len(raw) > 1 for raw in forms.values()), "feeds should overlap with other params"
    feeds = [app.schedule_job(kind="feed", url=f"{urls.control_url}/feeds/{feed}", every=4 * 3600,
                              now=harness.clock.now()) for feed in FEEDS]

    harness.until_idle()
    first = _product_page_jobs(harness)
    harness.clock.advance(DAY)  # every feed is due again (same epoch: the same links)
    harness.until_idle()
    second = _product_page_jobs(harness)

    envelopes = harness.envelopes()
    runs = Counter(e.stream_id for e in envelopes if e.event_type == "CrawlJob.Succeeded")
    assert [runs[str(f)] for f in feeds] == [2, 2, 2]
    assert set(first) == set(forms) == set(harness.sim.simulator.truth(0)["feed_links"])
    assert first == second and set(second.values()) == {1}
    children = Counter(e.payload["child_job"] for e in envelopes
                       if e.event_type == "CrawlJob.ChildScheduled"
                       and e.stream_id in {str(f) for f in feeds})
    assert len(children) == len(forms) and set(children.values()) == {1}
    pages = _by_kind(harness.ledger.read.jobs())["product_page"]
    assert {p["parent_job"] for p in pages} <= {str(f) for f in feeds}
    assert {p["priority"] for p in pages} == {CHAIN_PRIORITY_BOOST}
