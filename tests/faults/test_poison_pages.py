"""Poison pages under the embedded runner: a 20 MB body, a slow drip, invalid
encodings, a gzip bomb, a redirect loop and a 100,000-link feed, served on loopback
beside an ordinary shop. Every job ends settled with a clear reason, the ordinary
shop is crawled meanwhile, the feed's fan-out is capped with the excess counted, and
the read models equal a rebuild."""

from __future__ import annotations

import asyncio
import gzip
import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from backends import LOOPBACK_ENV
from http_fixtures import RecordingServer, redirect, serving, streaming, trickling
from invariants import check, jobs_settled, no_duplicate_effects, read_models_equal_rebuild

from domain.chaining import DEFAULT_MAX_NEW_JOBS
from domain.crawl_job import RetryPolicy
from eventstore.pack_index import open_pack_index
from ledger.bootstrap import bootstrap
from ledger.drivers.embedded import EmbeddedRunner
from ledger.settings import Settings
from runtime.clock import SystemClock
from runtime.ledger import Ledger
from workers.crawler import MAX_LINKS, build_crawler
from workers.extraction import adapters
from workers.fetching.addresses import AddressGuard
from workers.fetching.fetch import FetchLimits
from workers.fetching.http import build_client

pytestmark = pytest.mark.timeout(240)
MB = 1024 * 1024
LINKS = 100_000
LIMITS = FetchLimits(total_timeout=3.0, read_timeout=2.0, max_bytes=8 * MB)
PRODUCT = ('<html><head><script type="application/ld+json">{"@type": "Product", "name": "%s",'
           ' "offers": {"price": "%s", "priceCurrency": "EUR"}}</script></head></html>')


def gzip_bomb() -> Any:
    body = gzip.compress(b"\0" * (256 * MB), compresslevel=9)  # ~250 KB on the wire

    async def handler(_: web.Request) -> web.StreamResponse:
        return web.Response(body=body, headers={"Content-Encoding": "gzip",
                                                "Content-Type": "text/html"})
    return handler


def invalid_encoding() -> Any:
    page = (PRODUCT % ("Caf\xe9 \udcff", "4.20")).encode("utf-8", "surrogateescape")
    page = page.replace(b"Caf\xc3\xa9", b"Caf\xe9\xff\xfe")  # latin-1 bytes in "utf-8"

    async def handler(_: web.Request) -> web.StreamResponse:
        return web.Response(body=page, headers={"Content-Type": "text/html; charset=utf-8"})
    return handler


def feed(shop: RecordingServer) -> Any:
    posts = [{"id": f"p{n}", "text": "", "created_at": "2026-03-01T10:00:00Z",
              "links": [shop.url(f"/p/{n * 1000 + i}") for i in range(1000)]}
             for n in range(LINKS // 1000)]
    body = json.dumps({"posts": posts}).encode()

    async def handler(_: web.Request) -> web.StreamResponse:
        return web.Response(body=body, content_type="application/json")
    return handler


@contextmanager
def ledger_in(tmp_path: Path) -> Iterator[Ledger]:
    ledger = bootstrap(Settings.from_env({**LOOPBACK_ENV, "LEDGER_DATA_DIR": str(tmp_path)}))
    try:
        yield ledger
    finally:
        ledger.close()


async def crawl_until_idle(ledger: Ledger, servers: list[RecordingServer]) -> None:
    guard = AddressGuard(["127.0.0.0/8"])  # the poison servers, on loopback on purpose
    async with serving(*servers), build_client(guard=guard) as client:
        crawler = build_crawler(client, ledger.data_dir, open_pack_index, adapters.REGISTRY, limits=LIMITS,
                                guard=guard)
        try:
            await EmbeddedRunner(ledger, crawler, SystemClock(), concurrency=8,
                                 tick_seconds=0.2).run(until_idle=True)
        finally:
            crawler.close()


def test_poison_pages_settle_with_clear_reasons(tmp_path: Path) -> None:
    shop = RecordingServer()
    shop.text("/lamp", PRODUCT % ("Lamp", "9.50"))
    poison = {name: RecordingServer() for name in
              ("big", "drip", "encoding", "bomb", "loop", "feed")}
    poison["big"].route("/p", streaming(poison["big"], "big", total=20 * MB, chunk=64 * 1024))
    poison["drip"].route("/p", trickling(0.5, 100))
    poison["encoding"].route("/p", invalid_encoding())
    poison["bomb"].route("/p", gzip_bomb())
    poison["loop"].route("/p", redirect("/q"))
    poison["loop"].route("/q", redirect("/p"))
    poison["feed"].route("/p", feed(shop))
    with ledger_in(tmp_path) as ledger:
        app, now = ledger.app, SystemClock().now()
        jobs = {}
        for name, server in [("shop", shop), *poison.items()]:
            store = app.register_store(name=name, base_url=server.url("/"), platform="generic",
                                       now=now, crawl_delay=0.0, max_concurrency=8)
            kind = "feed" if name == "feed" else "product_page"
            jobs[name] = app.schedule_job(kind=kind, url=server.url("/lamp" if name == "shop"
                                                                    else "/p"), now=now,
                                          store_id=None if kind == "feed" else store,
                                          retry_policy=RetryPolicy(max_attempts=1))
        asyncio.run(crawl_until_idle(ledger, [shop, *poison.values()]))
        ledger.catch_up()
        status = {name: ledger.read.job(str(job_id)) for name, job_id in jobs.items()}
        kinds = {name: row["last_error_kind"] for name, row in status.items()}
        assert status["shop"]["last_status"] == "succeeded", status["shop"]
        assert kinds["big"] == "too_large" and kinds["bomb"] == "too_large", kinds
        assert kinds["drip"] == "timeout" and kinds["loop"] == "too_many_redirects", kinds
        assert status["encoding"]["last_status"] == "succeeded", status["encoding"]
        assert status["feed"]["last_status"] == "succeeded" and status["feed"]["children"] \
            == DEFAULT_MAX_NEW_JOBS, status["feed"]
        succeeded = [e for e in ledger.source.read(0, 10_000_000)
                     if e.event_type == "CrawlJob.Succeeded" and str(e.stream_id) == str(jobs["feed"])]
        assert succeeded[0].payload["outcome"]["dropped"] == LINKS - DEFAULT_MAX_NEW_JOBS
        assert LINKS - MAX_LINKS > 0  # the crawler's own cap took part
        assert poison["big"].bytes_sent["big"] < 20 * MB
        envelopes = ledger.source.read(0, 10_000_000)
        check("poison pages (20 MB, drip, encodings, gzip bomb, loop, 100k links)", {
            "no_duplicate_effects": lambda: no_duplicate_effects(envelopes),
            "read_models_equal_rebuild": lambda: read_models_equal_rebuild(ledger),
            "jobs_settled": lambda: jobs_settled(ledger),
        })
