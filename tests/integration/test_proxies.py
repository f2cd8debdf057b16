"""The egress proxy pool end to end: a real loopback proxy, the crawler, and the
ledger on both backends (health changes recorded as events, counters beside them)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

from aiohttp import web
from http_fixtures import RecordingServer, serving
from proxy_fixtures import LoopbackProxy, closed_port

from domain.envelope import Envelope
from domain.values import CrawlFailure, CrawlSuccess, CrawlTask, Observation, Policy
from eventstore.pack_index import open_pack_index
from runtime.ledger import Ledger
from runtime.proxy_pool import ProxyKeeper, add_proxy, proxy_rows
from workers.crawler import Crawler, build_crawler
from workers.extraction.adapters.base import Extraction, Page, Request
from workers.extraction.adapters.registry import Registry
from workers.fetching.addresses import AddressGuard
from workers.fetching.egress import Egress
from workers.fetching.http import build_client
from workers.fetching.proxy_choice import ProxyPool

T = TypeVar("T")
T0 = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)
LOOPBACK = AddressGuard(["127.0.0.0/8"])  # the test servers and proxies, allowed on purpose


class Clock:
    def __init__(self) -> None:
        self.t = T0.timestamp()

    def __call__(self) -> float:
        return self.t

    def now(self) -> datetime:
        return datetime.fromtimestamp(self.t, UTC)


class OneProduct:
    name, version = "one", "1"

    def detects(self, page: Page) -> bool:
        return True

    def start(self, task: CrawlTask) -> Request:
        return Request(task.url)

    def extract(self, page: Page, task: CrawlTask) -> Extraction:
        return Extraction(observations=(Observation("p1", page.text[:20]),))


def task(url: str, egress: str | None) -> CrawlTask:
    return CrawlTask("job", "lease", 1, "catalog", url,
                     policy=Policy(crawl_delay=0.0, max_concurrency=4, egress=egress))


def shop() -> RecordingServer:
    server = RecordingServer()
    server.text("/robots.txt", "User-agent: *\nAllow: /\n", "text/plain")
    server.text("/menu", "blue dream", "text/plain")

    async def busy(_: web.Request) -> web.StreamResponse:
        return web.Response(status=429, text="slow down")

    server.route("/busy", busy)
    return server


def crawling(tmp_path: Path, pool: ProxyPool,
             body: Callable[[Crawler], Awaitable[T]]) -> T:
    async def scenario() -> T:
        async with build_client(guard=LOOPBACK) as direct:
            egress = Egress(pool, lambda url: build_client(proxy=url, guard=LOOPBACK))
            crawler = build_crawler(direct, tmp_path, open_pack_index, Registry((OneProduct(),)), guard=LOOPBACK,
                                    egress=egress)
            try:
                return await body(crawler)
            finally:
                crawler.close()
                await egress.aclose()
    return asyncio.run(scenario())


def keeper_for(ledger: Ledger, clock: Clock, max_failures: int = 3) -> ProxyKeeper:
    pool = ProxyPool(clock, max_failures=max_failures, cooldown=300.0)
    return ProxyKeeper(ledger, ledger.tables.proxies, pool, clock.now)


async def added(ledger: Ledger, keeper: ProxyKeeper, url: str, region: str | None = None
                ) -> str:
    proxy_id = await add_proxy(ledger, keeper.store, LOOPBACK, url, region, T0)
    ledger.catch_up()
    keeper.refresh()
    return str(proxy_id)


def rows(ledger: Ledger, keeper: ProxyKeeper) -> list[dict[str, Any]]:
    ledger.catch_up()
    return proxy_rows(ledger, keeper.store)


def proxy_events(ledger: Ledger) -> list[Envelope]:
    return [e for e in ledger.source.read(0, 10_000) if e.stream_type == "Proxy"]


def test_a_store_with_egress_crawls_through_the_proxy(ledger: Ledger, tmp_path: Path) -> None:
    clock, server = Clock(), shop()
    keeper = keeper_for(ledger, clock)

    async def body(crawler: Crawler) -> tuple[object, object]:
        async with serving(server), LoopbackProxy() as proxy:
            await added(ledger, keeper, proxy.url, "eu")
            via = await crawler.crawl(task(server.url("/menu"), "region:eu"))
            direct = await crawler.crawl(task(server.url("/menu?direct"), None))
            assert proxy.hits == [server.url("/robots.txt"), server.url("/menu")]
            return via, direct

    via, direct = crawling(tmp_path, keeper.pool, body)
    assert isinstance(via, CrawlSuccess) and isinstance(direct, CrawlSuccess), (via, direct)
    assert server.paths() == ["/robots.txt", "/menu", "/menu?direct"]  # the shop saw all
    keeper.step()
    [row] = rows(ledger, keeper)
    assert (row["region"], row["healthy"], row["successes"], row["failures"]) == ("eu", True, 1, 0)
    assert row["latency_ms"] is not None


def test_no_usable_proxy_never_falls_back_to_a_direct_connection(ledger: Ledger,
                                                                 tmp_path: Path) -> None:
    clock, server = Clock(), shop()
    keeper = keeper_for(ledger, clock)

    async def body(crawler: Crawler) -> object:
        async with serving(server), LoopbackProxy() as proxy:
            await added(ledger, keeper, proxy.url, "eu")
            return await crawler.crawl(task(server.url("/menu"), "region:us"))

    outcome = crawling(tmp_path, keeper.pool, body)
    assert isinstance(outcome, CrawlFailure) and "no active egress proxy" in outcome.message
    assert server.hits == []


def test_a_dead_proxy_is_deactivated_then_retested_and_reactivated(ledger: Ledger,
                                                                    tmp_path: Path) -> None:
    clock, server, port = Clock(), shop(), closed_port()
    keeper = keeper_for(ledger, clock)
    proxy_id = asyncio.run(added(ledger, keeper, f"http://127.0.0.1:{port}"))

    async def body(crawler: Crawler) -> list[object]:
        async with serving(server):
            outcomes = [await crawler.crawl(task(server.url("/menu"), "pool")) for _ in range(3)]
            await asyncio.to_thread(keeper.step)
            outcomes.append(await crawler.crawl(task(server.url("/menu"), "pool")))  # still out
            [out] = rows(ledger, keeper)
            assert (out["healthy"], out["consecutive_failures"]) == (False, 3)
            clock.t += 299
            outcomes.append(await crawler.crawl(task(server.url("/menu"), "pool")))  # cooling
            clock.t += 2
            async with LoopbackProxy(port=port) as proxy:  # it works again
                outcomes.append(await crawler.crawl(task(server.url("/menu"), "pool")))
                assert proxy.hits  # the re-test went through it
            await asyncio.to_thread(keeper.step)
            return outcomes

    outcomes = crawling(tmp_path, keeper.pool, body)
    kinds = [o.error_kind if isinstance(o, CrawlFailure) else "ok" for o in outcomes]
    assert kinds == ["connect"] * 5 + ["ok"], outcomes
    assert all("no active egress proxy" in o.message for o in outcomes[3:5]
               if isinstance(o, CrawlFailure))
    events = proxy_events(ledger)
    assert [e.event_type for e in events] == ["Proxy.Added", "Proxy.Deactivated",
                                              "Proxy.Reactivated"]
    assert events[1].payload["consecutive_failures"] == 3
    assert events[1].payload["retest_at"].startswith("2026-05-01T12:05:00")
    [row] = rows(ledger, keeper)
    assert (row["proxy_id"], row["healthy"], row["failures"], row["successes"]) == (
        proxy_id, True, 3, 1)


def test_a_failed_retest_keeps_the_proxy_out(ledger: Ledger, tmp_path: Path) -> None:
    clock, server, port = Clock(), shop(), closed_port()
    keeper = keeper_for(ledger, clock, max_failures=1)
    asyncio.run(added(ledger, keeper, f"http://127.0.0.1:{port}"))

    async def body(crawler: Crawler) -> None:
        async with serving(server):
            await crawler.crawl(task(server.url("/menu"), "pool"))
            await asyncio.to_thread(keeper.step)
            clock.t += 301
            await crawler.crawl(task(server.url("/menu"), "pool"))  # the re-test fails
            await asyncio.to_thread(keeper.step)

    crawling(tmp_path, keeper.pool, body)
    events = proxy_events(ledger)
    assert [e.event_type for e in events] == ["Proxy.Added", "Proxy.Deactivated",
                                              "Proxy.RetestFailed"]
    assert events[2].payload["retest_at"].startswith("2026-05-01T12:10:01")
    [row] = rows(ledger, keeper)
    assert not row["healthy"] and row["last_error"].startswith("connect")


def test_a_429_from_the_site_is_not_a_proxy_failure(ledger: Ledger, tmp_path: Path) -> None:
    clock, server = Clock(), shop()
    keeper = keeper_for(ledger, clock, max_failures=1)  # one counted failure would show

    async def body(crawler: Crawler) -> list[object]:
        async with serving(server), LoopbackProxy() as first, LoopbackProxy() as second:
            first_id = await added(ledger, keeper, first.url)
            await added(ledger, keeper, second.url)
            keeper.pool.get(first_id).latency = 0.001  # type: ignore[union-attr]
            keeper.pool.get(next(p.proxy_id for p in keeper.pool.proxies()  # type: ignore[union-attr]
                                 if p.proxy_id != first_id)).latency = 0.5
            outcomes = [await crawler.crawl(task(server.url("/busy"), "pool"))
                        for _ in range(2)]
            assert len(second.hits) == 0  # the choice never moved away from the faster one
            assert first.hits.count(server.url("/busy")) >= 1
            return outcomes

    outcomes = crawling(tmp_path, keeper.pool, body)
    assert all(isinstance(o, CrawlFailure) and o.error_kind == "rate_limited" for o in outcomes)
    keeper.step()
    assert [e.event_type for e in proxy_events(ledger)] == ["Proxy.Added", "Proxy.Added"]
    assert all(row["healthy"] and row["failures"] == 0 for row in rows(ledger, keeper))


def test_credentials_are_used_but_never_recorded(ledger: Ledger, tmp_path: Path) -> None:
    clock, server = Clock(), shop()
    keeper = keeper_for(ledger, clock)

    async def body(crawler: Crawler) -> object:
        async with serving(server), LoopbackProxy(credentials="crawler:s3cr3t-pw") as proxy:
            await added(ledger, keeper, proxy.url)
            outcome = await crawler.crawl(task(server.url("/menu"), "pool"))
            assert proxy.refused == 0 and server.url("/menu") in proxy.hits
            return outcome

    assert isinstance(crawling(tmp_path, keeper.pool, body), CrawlSuccess)
    keeper.step()
    everything = json.dumps([e.payload for e in ledger.source.read(0, 10_000)], default=str)
    assert "s3cr3t-pw" not in everything and "crawler:" not in everything
    assert "s3cr3t-pw" not in json.dumps(rows(ledger, keeper))


def test_a_distributed_crawl_worker_keeps_its_pool_in_step_with_the_ledger(
        store_url: str, tmp_path: Path) -> None:
    """`worker --role crawl` (Faust): the crawler its resources open knows the ledger's
    proxies before the first crawl, records its pool's health changes as events and
    sees an operator's `proxies disable` on its next refresh."""
    from backends import settings_for

    from ledger.bootstrap import bootstrap, components
    from streams.resources import Resources, WorkerOptions

    settings = settings_for(store_url, tmp_path)
    ledger = bootstrap(settings)
    try:
        store = ledger.tables.proxies
        proxy_id = str(asyncio.run(add_proxy(ledger, store, LOOPBACK,
                                             f"http://127.0.0.1:{closed_port()}", None, T0)))
        ledger.catch_up()  # the projectors' part

        async def worker() -> list[bool]:
            res = Resources(components(settings), WorkerOptions())
            try:
                crawler: Any = await res.crawler()
                pool = crawler.egress.pool
                seen = [[p.proxy_id for p in pool.proxies()] == [proxy_id]]
                for _ in range(pool.max_failures):
                    pool.failed(proxy_id, "connect refused")
                await res.keep_proxies()
                await asyncio.to_thread(ledger.app.disable_proxy, proxy_id, "retired",
                                        datetime.now(UTC))
                await asyncio.to_thread(ledger.catch_up)
                await res.keep_proxies()
                found = pool.get(proxy_id)
                return [*seen, found is not None and not found.config.enabled]
            finally:
                await res.close()

        assert asyncio.run(worker()) == [True, True]
        kinds = [e.event_type for e in proxy_events(ledger)]
        assert kinds == ["Proxy.Added", "Proxy.Deactivated", "Proxy.Disabled"]
    finally:
        ledger.close()
