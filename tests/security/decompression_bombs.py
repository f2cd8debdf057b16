"""Decompression bombs, and a child process that fetches them and reports its peak memory.

`python decompression_bombs.py` (tests/ on its path) serves each bomb on loopback,
fetches it as a page, as robots.txt and as an image through the production client,
and prints one JSON object: each fetch's outcome and the peak RSS growth (MiB) over
the process's own after a warm-up fetch. `python decompression_bombs.py runner DIR`
crawls bomb pages and a bomb robots.txt with the embedded runner (ledger in DIR)
after a warm-up crawl of an ordinary shop, and prints each job's error kind and the
peak RSS growth over the warm runner's. The address space is capped (`AS_HEADROOM`
over the warm process), so a fetcher that inflates a bomb fails with MemoryError
instead of taking the machine's memory.
"""

from __future__ import annotations

import asyncio
import json
import resource
import sys
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import zstandard
from aiohttp import web
from http_fixtures import RecordingServer, serving

from domain.crawl_job import RetryPolicy
from domain.values import ImageFailure, Policy
from eventstore.pack_index import open_pack_index
from ledger.bootstrap import bootstrap
from ledger.drivers.embedded import EmbeddedRunner
from ledger.settings import Settings
from runtime.clock import SystemClock
from runtime.ledger import Ledger
from workers.crawler import build_crawler
from workers.extraction import adapters
from workers.extraction.adapters.base import Request
from workers.fetching.addresses import AddressGuard
from workers.fetching.fetch import Fetcher, FetchLimits
from workers.fetching.fetch_errors import FetchError
from workers.fetching.http import RobotsFetcher, build_client
from workers.fetching.image_download import IMAGE_LIMITS, ImageDownloader

MIB = 1024 * 1024
LOOPBACK = AddressGuard(["127.0.0.0/8"])
#: the most address space the fetches may add (the bombs inflate to 1 GiB)
AS_HEADROOM = 768 * MIB


def _zeros_deflate(total_mib: int) -> tuple[bytes, int]:
    """A raw deflate stream of `total_mib` MiB of zeros (built from one repeated block),
    with the CRC-32 of what it inflates to."""
    block = b"\0" * MIB
    compressor = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS)
    # after a full flush nothing refers back, so every block compresses the same
    unit = compressor.compress(block) + compressor.flush(zlib.Z_FULL_FLUSH)
    crc = 0
    for _ in range(total_mib):
        crc = zlib.crc32(block, crc)
    return unit * total_mib + compressor.flush(zlib.Z_FINISH), crc


def gzip_of_zeros(total_mib: int) -> bytes:
    """A gzip member inflating to `total_mib` MiB of zeros (~1 KB a MiB)."""
    deflated, crc = _zeros_deflate(total_mib)
    header = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"
    size = (total_mib * MIB) % 2**32
    return header + deflated + crc.to_bytes(4, "little") + size.to_bytes(4, "little")


def gzip_gzip_bomb(total_mib: int = 1024) -> bytes:
    """`Content-Encoding: gzip, gzip`: a few KB on the wire, `total_mib` inside."""
    return zlib.compress(gzip_of_zeros(total_mib), 9, wbits=31)


def zstd_bomb(total_mib: int = 1024) -> bytes:
    """One zstd frame of `total_mib` MiB of zeros (~32 KB a GiB)."""
    compressor = zstandard.ZstdCompressor(level=3).compressobj()
    block = b"\0" * MIB
    return b"".join([compressor.compress(block) for _ in range(total_mib)]
                    + [compressor.flush()])


#: name -> (Content-Encoding, body)
BOMBS: dict[str, Callable[[], tuple[str, bytes]]] = {
    "gzip, gzip": lambda: ("gzip, gzip", gzip_gzip_bomb()),
    "zstd": lambda: ("zstd", zstd_bomb()),
    "gzip": lambda: ("gzip", gzip_of_zeros(1024)),
}


def _serve(server: RecordingServer, path: str, coding: str, body: bytes,
           content_type: str) -> None:
    async def handler(_: web.Request) -> web.StreamResponse:
        return web.Response(body=body, headers={"Content-Encoding": coding,
                                                "Content-Type": content_type})

    server.route(path, handler)


def _peak_rss() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def _cap_address_space() -> None:
    with open("/proc/self/status") as status:
        size = next(int(line.split()[1]) * 1024 for line in status if line.startswith("VmSize"))
    limit = size + AS_HEADROOM
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


async def _page(fetcher: Fetcher, url: str) -> dict[str, Any]:
    try:
        page = await fetcher.fetch(Request(url), "bomb-test")
    except FetchError as error:
        return {"kind": error.kind, "message": error.message}
    return {"kind": "ok", "bytes": len(page.body)}


async def _fetch_all() -> dict[str, Any]:
    server = RecordingServer()
    server.text("/warm", "<p>warm</p>" * 1000)
    for number, (coding, body) in enumerate(make() for make in BOMBS.values()):
        _serve(server, f"/page{number}", coding, body, "text/html")
        _serve(server, f"/image{number}", coding, body, "image/png")
    async with serving(server), build_client(guard=LOOPBACK) as client:
        pages = Fetcher(client, FetchLimits(), guard=LOOPBACK)
        robots = RobotsFetcher(Fetcher(client, FetchLimits(max_bytes=512 * 1024),
                                       guard=LOOPBACK))
        images = ImageDownloader(Fetcher(client, IMAGE_LIMITS, guard=LOOPBACK))
        await _page(pages, server.url("/warm"))
        _cap_address_space()
        idle = _peak_rss()
        results: dict[str, Any] = {}
        for number, name in enumerate(BOMBS):
            robots_file = await robots(server.url(f"/page{number}"), "bomb-test")
            image = await images.fetch(server.url(f"/image{number}"), Policy())
            results[name] = {
                "page": await _page(pages, server.url(f"/page{number}")),
                "robots": {"status": robots_file.status, "detail": robots_file.detail},
                "image": ({"kind": image.kind, "message": image.reason}
                          if isinstance(image, ImageFailure) else {"kind": "ok"}),
            }
        return {"results": results, "peak_growth_mib": (_peak_rss() - idle) / MIB}


PRODUCT = ('<html><head><script type="application/ld+json">{"@type": "Product", "name": '
           '"Lamp", "offers": {"price": "9.50", "priceCurrency": "EUR"}}</script></head></html>')


async def _run_until_idle(ledger: Ledger, client: Any) -> None:
    crawler = build_crawler(client, ledger.data_dir, open_pack_index, adapters.REGISTRY, guard=LOOPBACK)
    try:
        await EmbeddedRunner(ledger, crawler, SystemClock(), concurrency=4,
                             tick_seconds=0.1).run(until_idle=True)
    finally:
        crawler.close()


def _schedule(ledger: Ledger, name: str, url: str) -> str:
    app, now = ledger.app, SystemClock().now()
    store = app.register_store(name=name, base_url=url, platform="generic", now=now,
                               crawl_delay=0.0, max_concurrency=4)
    return str(app.schedule_job(kind="product_page", url=f"{url}p", now=now, store_id=store,
                                retry_policy=RetryPolicy(max_attempts=1)))


async def _crawl_bombs(data_dir: str) -> dict[str, Any]:
    shop, robots = RecordingServer(), RecordingServer()
    shop.text("/p", PRODUCT)
    robots.text("/p", PRODUCT)
    _serve(robots, "/robots.txt", "gzip, gzip", gzip_gzip_bomb(), "text/plain")
    bombs = {name: RecordingServer() for name in BOMBS}
    for (coding, body), server in zip((make() for make in BOMBS.values()), bombs.values(),
                                      strict=True):
        _serve(server, "/p", coding, body, "text/html")
    ledger = bootstrap(Settings.from_env({"LEDGER_DATA_DIR": data_dir,
                                          "LEDGER_ALLOW_NETWORKS": "127.0.0.0/8"}))
    try:
        async with serving(shop, robots, *bombs.values()), \
                build_client(guard=LOOPBACK) as client:
            warm = _schedule(ledger, "shop", shop.url("/"))
            await _run_until_idle(ledger, client)
            _cap_address_space()
            idle = _peak_rss()
            jobs = {name: _schedule(ledger, name, server.url("/"))
                    for name, server in [("robots", robots), *bombs.items()]}
            await _run_until_idle(ledger, client)
            growth = (_peak_rss() - idle) / MIB
        ledger.catch_up()
        rows = {name: ledger.read.job(job) or {} for name, job in [("shop", warm), *jobs.items()]}
        return {"jobs": {name: [row.get("last_status"), row.get("last_error_kind")]
                         for name, row in rows.items()},
                "peak_growth_mib": growth}
    finally:
        ledger.close()


if __name__ == "__main__":
    if sys.argv[1:2] == ["runner"]:
        print(json.dumps(asyncio.run(_crawl_bombs(str(Path(sys.argv[2]))))))
    else:
        print(json.dumps(asyncio.run(_fetch_all())))
