"""The workers' platform adapters read the simulator's pages as the truth says.

Drives each adapter's request/extract loop over real HTTP (a plain synchronous
httpx client; politeness and archiving are the crawler's business, not this test's).
"""

from __future__ import annotations

from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import httpx
import pytest

from domain.values import CrawlTask, Observation
from simulator import ServedStore, SimulatorThread
from workers.extraction.adapters import Extraction, Page, Request, for_task

CENT = Decimal("0.01")


@pytest.fixture(scope="module")
def sim() -> Iterator[SimulatorThread]:
    with SimulatorThread(stores=5, seed=8) as running:
        yield running


@pytest.fixture
def client() -> Iterator[httpx.Client]:
    with httpx.Client(timeout=5) as c:
        yield c


def _fetch(client: httpx.Client, request: Request) -> Page:
    reply = client.request(request.method, request.url, json=request.json)
    return Page(url=str(reply.url), text=reply.text, status=reply.status_code,
                content_type=reply.headers.get("content-type", ""), body=reply.content,
                request=request)


def _crawl(client: httpx.Client, task: CrawlTask) -> list[Extraction]:
    adapter = for_task(task)
    request: Request | None = adapter.start(task)
    extractions = []
    while request is not None:
        extraction = adapter.extract(_fetch(client, request), task)
        extractions.append(extraction)
        request = extraction.next_request
    return extractions


def _task(kind: str, url: str, store: ServedStore | None = None, **extra: Any) -> CrawlTask:
    platform = store.platform if store else None
    return CrawlTask(job_id="job", lease_id="lease", attempt=1, kind=kind, url=url,
                     platform=platform, **extra)


def _observed(observations: list[Observation]) -> dict[str, list[tuple[Any, ...]]]:
    return {o.provider_product_id: sorted((
        (f.option, f.price.quantize(CENT) if f.price is not None else None,
         f.special_price.quantize(CENT) if f.special_price is not None else None,
         f.availability, f.currency, f.pricing_type) for f in o.offers), key=str)
        for o in observations}


def _expected(products: dict[str, Any], platform: str) -> dict[str, list[tuple[Any, ...]]]:
    """The truth's offers; a dispensary menu also prices its medical menu, at the regular
    price (no medical specials), and says so: an offer each."""
    def dec(value: str | None) -> Decimal | None:
        return None if value is None else Decimal(value)

    kind = {"dispensary": "rec"}.get(platform, "regular")
    expected = {}
    for pid, p in products.items():
        offers = [(f["option"], dec(f["price"]), dec(f["special_price"]), f["availability"],
                   f["currency"], kind) for f in p["offers"]]
        if platform == "dispensary":
            offers += [(f["option"], dec(f["price"]), None, f["availability"], f["currency"],
                        "medical") for f in p["offers"]]
        expected[pid] = sorted(offers, key=str)
    return expected


def _catalog_task(client: httpx.Client, store: ServedStore) -> CrawlTask:
    if store.platform != "dispensary":
        return _task("catalog", store.entry_url, store)
    (resolved,) = _crawl(client, _task("entry_point", store.entry_url, store))
    assert resolved.platform_store_id == store.spec.platform_id
    return _task("catalog", str(resolved.catalog_url), store,
                 platform_store_id=resolved.platform_store_id)


@pytest.mark.parametrize("epoch", [0, 7])
def test_every_platform_crawls_to_the_truth(sim: SimulatorThread, client: httpx.Client,
                                            epoch: int) -> None:
    sim.simulator.set_epoch(epoch)
    truth = sim.simulator.truth()
    for store in sim.urls.stores:
        task = _catalog_task(client, store)
        observations = [o for e in _crawl(client, task) for o in e.observations]
        assert _observed(observations) == _expected(truth["stores"][store.key]["products"],
                                                    store.platform), store


def test_product_page_yields_the_main_product_only(sim: SimulatorThread,
                                                   client: httpx.Client) -> None:
    sim.simulator.set_epoch(0)
    truth = sim.simulator.truth()
    for store in sim.urls.stores:
        if store.platform not in ("jsonld", "microdata"):
            continue
        products = truth["stores"][store.key]["products"]
        pid, product = next(iter(products.items()))
        (page,) = _crawl(client, _task("product_page", product["url"], store))
        assert _observed(list(page.observations)) == _expected({pid: product}, store.platform)


def test_locator_and_feeds(sim: SimulatorThread, client: httpx.Client) -> None:
    sim.simulator.set_epoch(3)
    (located,) = _crawl(client, _task("store_discovery", sim.urls.locator_url))
    assert [(s.base_url, s.platform, s.entry_url) for s in located.stores] == [
        (s.base_url, s.platform, s.entry_url) for s in sim.urls.stores]
    links: set[str] = set()
    for feed in ("rss.xml", "atom.xml", "social.json"):
        (found,) = _crawl(client, _task("feed", f"{sim.urls.control_url}/feeds/{feed}"))
        assert not any("utm_" in link or "fbclid" in link for link in found.links)
        links |= set(found.links)
    assert sorted(links) == sim.simulator.truth()["feed_links"]
