"""`Crawler.crawl` end to end against loopback servers, with real time.

A tiny JSON adapter stands in for the platform adapters:
`{"products": [{"id": .., "name": ..}], "next": "/path"}`.
"""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TypeVar
from urllib.parse import urljoin

from aiohttp import web
from http_fixtures import RecordingServer, redirect, serving, status, streaming, trickling

from domain.values import CrawlFailure, CrawlOutcome, CrawlSuccess, CrawlTask, Observation, Policy
from eventstore.pack_index import open_pack_index
from workers.archive.raw_archive import RawArchive, content_hash
from workers.crawler import Crawler, build_crawler
from workers.extraction.adapters.base import Adapter, Extraction, ExtractionError, Page, Request
from workers.extraction.adapters.registry import Registry
from workers.fetching.addresses import AddressGuard
from workers.fetching.fetch import FetchLimits
from workers.fetching.http import build_client

T = TypeVar("T")
FAST = Policy(crawl_delay=0.0, max_concurrency=8)


class JsonAdapter:
    def __init__(self, name: str = "json-test", version: str = "1") -> None:
        self.name = name
        self.version = version

    def detects(self, page: Page) -> bool:
        return page.text.lstrip().startswith('{"products"')

    def start(self, task: CrawlTask) -> Request:
        return Request(task.url)

    def extract(self, page: Page, task: CrawlTask) -> Extraction:
        try:
            data = json.loads(page.text)
        except ValueError as error:
            raise ExtractionError(f"not JSON: {error}") from error
        products = tuple(
            Observation(provider_product_id=str(p["id"]), name=p["name"]) for p in data["products"]
        )
        following = data.get("next")
        return Extraction(
            observations=products,
            next_request=Request(urljoin(page.url, following)) if following else None,
        )


def adapters_of(*adapters: Adapter) -> Registry:
    return Registry(adapters or (JsonAdapter(),))


def task(url: str, kind: str = "catalog", policy: Policy = FAST, platform: str | None = None
         ) -> CrawlTask:
    return CrawlTask("job", "lease", 1, kind, url, platform=platform, policy=policy)


def products(*names: str, following: str | None = None) -> str:
    items = [{"id": n, "name": n} for n in names]
    return json.dumps({"products": items, "next": following})


def run(
    servers: tuple[RecordingServer, ...],
    body: Callable[[Crawler], Awaitable[T]],
    data_dir: Path,
    registry: Registry | None = None,
    limits: FetchLimits | None = None,
) -> T:
    async def scenario() -> T:
        guard = AddressGuard(["127.0.0.0/8"])  # the test servers, allowed on purpose
        async with serving(*servers), build_client(guard=guard) as client:
            crawler = build_crawler(
                client, data_dir, open_pack_index, registry or adapters_of(), limits=limits or FetchLimits(),
                guard=guard,
            )
            return await body(crawler)

    return asyncio.run(scenario())


def crawl_one(server: RecordingServer, a_task: CrawlTask, tmp_path: Path, **kw: object
              ) -> CrawlOutcome:
    return run((server,), lambda c: c.crawl(a_task), tmp_path, **kw)  # type: ignore[arg-type]


def gaps(times: list[float]) -> list[float]:
    ordered = sorted(times)
    return [b - a for a, b in itertools.pairwise(ordered)]


# --- success ------------------------------------------------------------------


def test_paginated_crawl_is_archived_and_hashed(tmp_path: Path) -> None:
    server = RecordingServer()
    server.text("/p1", products("a", "b", following="/p2"), "application/json")
    server.text("/p2", products("c", following="/p3"), "application/json")
    server.text("/p3", products("d"), "application/json")
    outcome = crawl_one(server, task(server.url("/p1")), tmp_path)
    assert isinstance(outcome, CrawlSuccess), outcome
    assert [o.name for o in outcome.observations] == ["a", "b", "c", "d"]
    assert (outcome.pages, outcome.extractor, outcome.extractor_version) == (3, "json-test", "1")
    assert outcome.final_url == server.url("/p1") and outcome.http_status == 200
    bodies = [products("a", "b", following="/p2"), products("c", following="/p3"), products("d")]
    assert outcome.content_hash == content_hash([b.encode() for b in bodies])
    assert outcome.bytes == sum(len(b) for b in bodies) and outcome.duration > 0
    archive = RawArchive(tmp_path, open_pack_index)
    assert outcome.raw_ref is not None
    assert [archive.get(r).decode() for r in archive.page_refs(outcome.raw_ref)] == bodies
    assert server.paths() == ["/robots.txt", "/p1", "/p2", "/p3"]


def test_adapter_by_platform_and_final_url_after_redirect(tmp_path: Path) -> None:
    server = RecordingServer()
    server.route("/start", redirect("/menu"))
    server.text("/menu", products("a"))
    outcome = crawl_one(server, task(server.url("/start"), platform="json-test"), tmp_path)
    assert isinstance(outcome, CrawlSuccess), outcome
    assert outcome.final_url == server.url("/menu")


# --- politeness, measured -----------------------------------------------------


def test_request_starts_spaced_per_host_under_20_concurrent_tasks(tmp_path: Path) -> None:
    a, b = RecordingServer(), RecordingServer()
    for server in (a, b):
        for i in range(10):
            server.text(f"/{i}", products(f"p{i}"))
    policy = Policy(crawl_delay=0.2, max_concurrency=4)
    tasks = [task(s.url(f"/{i}"), policy=policy) for i in range(10) for s in (a, b)]

    async def body(crawler: Crawler) -> list[CrawlOutcome]:
        return list(await asyncio.gather(*(crawler.crawl(t) for t in tasks)))

    outcomes = run((a, b), body, tmp_path)
    assert all(o.ok for o in outcomes), outcomes
    for server in (a, b):
        assert len(server.hits) == 11  # robots.txt + 10 pages
        assert min(gaps([h.at for h in server.hits])) >= 0.2 - 0.01
    # the hosts were served side by side, not one after the other
    assert a.hits[1].at < b.hits[-1].at and b.hits[1].at < a.hits[-1].at


def test_robots_disallowed_path_is_never_requested(tmp_path: Path) -> None:
    server = RecordingServer()
    server.text("/robots.txt", "User-agent: *\nDisallow: /private\n", "text/plain")
    server.text("/private/menu", products("secret"))
    server.text("/menu", products("a"))

    async def body(crawler: Crawler) -> list[CrawlOutcome]:
        urls = ["/private/menu", "/menu", "/private/menu"]
        return list(await asyncio.gather(*(crawler.crawl(task(server.url(u))) for u in urls)))

    disallowed, allowed, again = run((server,), body, tmp_path)
    assert isinstance(disallowed, CrawlFailure) and disallowed.error_kind == "robots_disallowed"
    assert not disallowed.retryable and "robots.txt" in disallowed.message
    assert allowed.ok and isinstance(again, CrawlFailure)
    assert again.error_kind == "robots_disallowed"
    assert server.paths() == ["/robots.txt", "/menu"]


def test_retry_after_pauses_the_host_while_another_is_served(tmp_path: Path) -> None:
    a, b = RecordingServer(), RecordingServer()
    a.route("/busy", status(429, {"Retry-After": "2"}))
    a.text("/next", products("x"))
    for i in range(5):
        b.text(f"/{i}", products(f"b{i}"))
    policy = Policy(crawl_delay=0.1, max_concurrency=2, respect_robots=False)

    async def host_a(crawler: Crawler) -> list[CrawlOutcome]:
        first = await crawler.crawl(task(a.url("/busy"), policy=policy))
        return [first, await crawler.crawl(task(a.url("/next"), policy=policy))]

    async def body(crawler: Crawler) -> list[CrawlOutcome]:
        async def host_b() -> list[CrawlOutcome]:
            crawls = (crawler.crawl(task(b.url(f"/{i}"), policy=policy)) for i in range(5))
            return list(await asyncio.gather(*crawls))

        a_outcomes, b_outcomes = await asyncio.gather(host_a(crawler), host_b())
        return [*a_outcomes, *b_outcomes]

    limited, later, *others = run((a, b), body, tmp_path)
    assert isinstance(limited, CrawlFailure)
    assert (limited.error_kind, limited.retry_after, limited.http_status) == ("rate_limited", 2.0, 429)
    assert later.ok and all(o.ok for o in others)
    busy, following = a.hits
    assert following.at - busy.at >= 2.0
    # host b was served during host a's pause (most of it after the 429)
    assert all(h.at < following.at for h in b.hits)
    assert sum(busy.at < h.at for h in b.hits) >= 4


# --- limits -------------------------------------------------------------------


def test_huge_body_refused_at_the_limit(tmp_path: Path) -> None:
    server = RecordingServer()
    server.route("/big", streaming(server, "big", total=10 * 1024 * 1024, chunk=16 * 1024))
    outcome = crawl_one(server, task(server.url("/big")), tmp_path,
                        limits=FetchLimits(max_bytes=1024 * 1024))
    assert isinstance(outcome, CrawlFailure) and outcome.error_kind == "too_large"
    assert server.bytes_sent["big"] < 10 * 1024 * 1024
    assert not (tmp_path / "raw").exists()


def test_trickling_server_hits_the_total_timeout(tmp_path: Path) -> None:
    server = RecordingServer()
    server.route("/slow", trickling(interval=1.0, total=30))
    outcome = crawl_one(server, task(server.url("/slow")), tmp_path,
                        limits=FetchLimits(read_timeout=5.0, total_timeout=1.5))
    assert isinstance(outcome, CrawlFailure) and outcome.error_kind == "timeout"
    assert outcome.retryable and 1.4 < outcome.duration < 4.0


def test_redirect_loop_stops_at_the_first_repeat(tmp_path: Path) -> None:
    server = RecordingServer()
    server.route("/a", redirect("/b"))
    server.route("/b", redirect("/a"))
    outcome = crawl_one(server, task(server.url("/a")), tmp_path,
                        limits=FetchLimits(max_redirects=4))
    assert isinstance(outcome, CrawlFailure) and outcome.error_kind == "too_many_redirects"
    assert "redirect loop" in outcome.message
    assert server.paths().count("/a") + server.paths().count("/b") == 2


def test_a_redirect_to_another_host_obeys_that_hosts_robots_txt(tmp_path: Path) -> None:
    first = RecordingServer("127.0.0.1")
    other = RecordingServer("127.0.0.2")
    first.route("/p", redirect(other.url("/private/p")))
    other.text("/robots.txt", "User-agent: *\nDisallow: /private/\n", "text/plain")
    other.text("/private/p", "<html></html>")
    outcome = run((first, other), lambda c: c.crawl(task(first.url("/p"))), tmp_path)
    assert isinstance(outcome, CrawlFailure) and outcome.error_kind == "robots_disallowed"
    assert other.paths() == ["/robots.txt"]  # asked, then kept out
    assert "/p" in first.paths()


# --- bad pages never escape as exceptions ------------------------------------


def test_bad_pages_become_parse_error_or_no_products(tmp_path: Path) -> None:
    server = RecordingServer()
    server.text("/truncated", products("a", "b")[:25], "application/json")
    server.text("/empty", products(), "application/json")
    server.text("/html", "<html><body>Closed for inventory</body></html>")
    server.text("/missing-name", '{"products": [{"id": 1}]}', "application/json")

    async def garbage(_: web.Request) -> web.StreamResponse:
        return web.Response(body=bytes(range(256)) * 64, content_type="application/octet-stream")

    server.route("/garbage", garbage)
    cases = {  # path -> (task platform, expected error kind)
        "/truncated": ("json-test", "parse_error"),
        "/empty": ("json-test", "no_products"),
        "/html": (None, "parse_error"),  # nothing detects it
        "/garbage": ("json-test", "parse_error"),
        "/missing-name": ("json-test", "parse_error"),  # the adapter raises KeyError
    }

    async def body(crawler: Crawler) -> dict[str, CrawlOutcome]:
        crawls = [crawler.crawl(task(server.url(p), platform=pf)) for p, (pf, _) in cases.items()]
        return dict(zip(cases, await asyncio.gather(*crawls), strict=True))

    outcomes = run((server,), body, tmp_path)
    kinds = {p: getattr(o, "error_kind", "ok") for p, o in outcomes.items()}
    assert kinds == {p: kind for p, (_, kind) in cases.items()}


def test_unexpected_errors_become_worker_error(tmp_path: Path) -> None:
    server = RecordingServer()
    outcome = crawl_one(server, task(server.url("/x"), platform="no-such-adapter"), tmp_path)
    assert isinstance(outcome, CrawlFailure) and outcome.error_kind == "worker_error"
    assert "no-such-adapter" in outcome.message and outcome.retryable


def test_store_discovery_with_no_stores_is_a_success(tmp_path: Path) -> None:
    server = RecordingServer()
    server.text("/stores", products())
    locator = JsonAdapter(name="locator")
    outcome = crawl_one(server, task(server.url("/stores"), kind="store_discovery"), tmp_path,
                        registry=adapters_of(locator))
    assert isinstance(outcome, CrawlSuccess) and outcome.extractor == "locator"


def test_a_product_page_that_is_gone_is_an_answer_not_a_failure(tmp_path: Path) -> None:
    server = RecordingServer()
    server.route("/products/gone", status(404))
    server.route("/products/removed", status(410))
    server.route("/collections/all", status(404))

    async def body(crawler: Crawler) -> list[CrawlOutcome]:
        return list(await asyncio.gather(
            crawler.crawl(task(server.url("/products/gone"), kind="product_page")),
            crawler.crawl(task(server.url("/products/removed"), kind="product_page")),
            crawler.crawl(task(server.url("/collections/all"), kind="catalog"))))

    gone, removed, catalog = run((server,), body, tmp_path)
    assert isinstance(gone, CrawlSuccess) and gone.gone and gone.http_status == 404
    assert isinstance(removed, CrawlSuccess) and removed.gone and removed.http_status == 410
    assert not gone.observations
    # a catalog that 404s is a failure: it says nothing about its products
    assert getattr(catalog, "error_kind", None) == "http_4xx"
