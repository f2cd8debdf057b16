"""The proxy pool under concurrency: eight crawls at once through real loopback proxies.

Health is decided once, in the pool every request of the worker shares: a proxy
is out for every request chosen after its deactivation (the event records that
decision), and a proxy that never carried a request is never reported healthy.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path

from http_fixtures import serving
from proxy_fixtures import ClosingPort, LoopbackProxy, closed_port
from test_proxies import Clock, added, crawling, keeper_for, proxy_events, rows, shop, task

from domain.values import CrawlOutcome, CrawlSuccess, ImageFailure
from runtime.ledger import Ledger
from workers.crawler import Crawler

CONCURRENCY = 8
ROUNDS = 5


def fetches(crawler: Crawler, url: Callable[[str], str]) -> list[Awaitable[object]]:
    """Eight at once: pages and image downloads (both route through the pool)."""
    pool = task("", "pool").policy
    return [crawler.crawl(task(url(f"/menu?{i}"), "pool")) if i % 2
            else crawler.fetch_image(url(f"/img{i}.png"), pool) for i in range(CONCURRENCY)]


def carried(outcome: object) -> bool:
    """Through a working proxy a page is crawled and the image (a 404 here) is the site's."""
    return isinstance(outcome, CrawlSuccess) or (
        isinstance(outcome, ImageFailure) and outcome.kind == "http_4xx")


def test_after_its_deactivation_no_request_goes_through_the_dead_proxy(
        ledger: Ledger, tmp_path: Path) -> None:
    clock, server = Clock(), shop()
    keeper = keeper_for(ledger, clock, max_failures=3)

    async def body(crawler: Crawler) -> tuple[list[list[object]], list[int], str]:
        async with serving(server), LoopbackProxy() as working, ClosingPort() as dead:
            await added(ledger, keeper, working.url)
            dead_id = await added(ledger, keeper, dead.url)
            rounds, accepted_after = [], []
            for _ in range(ROUNDS):
                rounds.append(await asyncio.gather(*fetches(crawler, server.url)))
                await asyncio.to_thread(keeper.step)  # records the deactivation
                accepted_after.append(dead.accepted)
            return rounds, accepted_after, dead_id

    rounds, accepted_after, dead_id = crawling(tmp_path, keeper.pool, body)
    deactivations = [e for e in proxy_events(ledger) if e.event_type == "Proxy.Deactivated"]
    assert [str(e.stream_id) for e in deactivations] == [dead_id]  # decided once
    # the first round's crawls decide; every later one goes through the working proxy
    assert accepted_after[0] > 0 and accepted_after[1:] == [accepted_after[0]] * (ROUNDS - 1)
    assert all(carried(o) for r in rounds[1:] for o in r), rounds[1:]
    by_id = {row["proxy_id"]: row for row in rows(ledger, keeper)}
    dead_row = by_id.pop(dead_id)
    assert (dead_row["healthy"], dead_row["successes"]) == (False, 0), dead_row
    assert dead_row["failures"] == sum(not carried(o) for o in rounds[0])
    [working_row] = by_id.values()
    assert working_row["healthy"] and working_row["failures"] == 0


def test_a_proxy_that_never_accepted_a_connection_is_never_healthy(
        ledger: Ledger, tmp_path: Path) -> None:
    clock, server = Clock(), shop()
    keeper = keeper_for(ledger, clock, max_failures=3)

    async def body(crawler: Crawler) -> list[CrawlOutcome]:
        async with serving(server):
            await added(ledger, keeper, f"http://127.0.0.1:{closed_port()}")
            images = await asyncio.gather(*(
                crawler.fetch_image(server.url(f"/img{i}.png"), task("", "pool").policy)
                for i in range(CONCURRENCY)))
            outcomes = await asyncio.gather(*(
                crawler.crawl(task(server.url(f"/menu?{i}"), "pool"))
                for i in range(CONCURRENCY)))
            await asyncio.to_thread(keeper.step)
            return [*images, *outcomes]  # type: ignore[list-item]

    outcomes = crawling(tmp_path, keeper.pool, body)
    assert not any(isinstance(o, CrawlSuccess) for o in outcomes), outcomes
    assert server.hits == []
    [row] = rows(ledger, keeper)
    assert (row["healthy"], row["successes"]) == (False, 0), row
    assert row["failures"] >= keeper.pool.max_failures
    assert [e.event_type for e in proxy_events(ledger)] == ["Proxy.Added", "Proxy.Deactivated"]
