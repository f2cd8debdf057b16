"""The crawl benchmark's page server: its own process, one port per loopback host."""

from __future__ import annotations

import asyncio
import collections
import json
import multiprocessing
import sys
from pathlib import Path
from typing import Any

from crawl_pages import ROBOTS_TXT, product_page

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

import corpus_files  # noqa: E402

PRIVATE_EVERY = 100  # one URL in 100 is disallowed by robots.txt


def real_pages() -> list[bytes]:
    """The real shop pages of the corpus whose bytes are present (sorted by file name),
    decompressed; none when the corpus bytes are not here (see tests/corpus_files.py)."""
    found = corpus_files.presence(corpus_files.manifest())
    return [corpus_files.content(path) for path in sorted(e["file"] for e in found.present)]


def _serve(hosts: int, pages: int, ports: Any, stop: Any, real_every: int) -> None:
    from aiohttp import web

    real = real_pages() if real_every else []

    def render(base: str, number: int) -> bytes:
        if real and number % real_every == 0:
            return real[number // real_every % len(real)]
        return product_page(base, number)

    async def main() -> None:
        runners = []
        for k in range(hosts):
            host = f"127.0.0.{k + 2}"
            cache: dict[int, bytes] = {}
            runner = web.AppRunner(_app(web, cache, pages, render), access_log=None)
            await runner.setup()
            site = web.TCPSite(runner, host, 0, backlog=1024)
            await site.start()
            runners.append(runner)
            port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
            # rendered up front, so no measured crawl pays for the server's first renders
            cache.update((n, render(f"http://{host}:{port}", n))
                         for n in range(k, pages, hosts))
            ports.put(port)
        while not stop.is_set():
            await asyncio.sleep(0.2)
        for runner in runners:
            await runner.cleanup()

    asyncio.run(main())


def _app(web: Any, cache: dict[int, bytes], pages: int, render: Any) -> Any:
    hits = collections.Counter[str]()

    async def robots(request: Any) -> Any:
        hits["robots"] += 1
        return web.Response(text=ROBOTS_TXT, content_type="text/plain")

    async def page(request: Any) -> Any:
        number = int(request.match_info["number"])
        if number >= pages:
            raise web.HTTPNotFound()
        hits["page"] += 1
        base = f"http://{request.host}"
        body = cache.get(number) or cache.setdefault(number, render(base, number))
        return web.Response(body=body, content_type="text/html", charset="utf-8")

    async def private(request: Any) -> Any:
        hits["private"] += 1
        return web.Response(text="should never be fetched", content_type="text/html")

    async def stats(request: Any) -> Any:
        return web.json_response(dict(hits))

    app = web.Application()
    app.router.add_get("/robots.txt", robots)
    app.router.add_get("/p/{number}", page)
    app.router.add_get("/private/{number}", private)
    app.router.add_get("/_stats", stats)
    return app


def urls_by_host(bases: list[str], pages: int) -> list[list[str]]:
    """`pages` pages spread over the hosts at `bases`; every PRIVATE_EVERY-th is a
    /private/ URL."""
    by_host: list[list[str]] = [[] for _ in bases]
    for number in range(pages):
        k = number % len(bases)
        kind = "private" if number % PRIVATE_EVERY == PRIVATE_EVERY - 1 else "p"
        by_host[k].append(f"{bases[k]}/{kind}/{number}")
    return by_host


class Server:
    """The page server. With `real_every` N, every N-th page (0, N, 2N, …) is a real shop
    page of tests/corpus instead of a generated one."""

    def __init__(self, hosts: int, pages: int, real_every: int = 0) -> None:
        ctx = multiprocessing.get_context("fork")
        self._ports = ctx.Queue()
        self._stop = ctx.Event()
        self._process = ctx.Process(target=_serve, args=(hosts, pages, self._ports, self._stop,
                                                             real_every),
                                    daemon=True)
        self.hosts = hosts
        self.pages = pages
        self.bases: list[str] = []

    def __enter__(self) -> Server:
        self._process.start()
        for k in range(self.hosts):
            self.bases.append(f"http://127.0.0.{k + 2}:{self._ports.get(timeout=30)}")
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._process.join(10)
        if self._process.is_alive():
            self._process.terminate()

    @property
    def pid(self) -> int | None:
        return self._process.pid

    def urls_by_host(self) -> list[list[str]]:
        """Pages spread over the hosts; every PRIVATE_EVERY-th is a /private/ URL."""
        return urls_by_host(self.bases, self.pages)

    def urls(self) -> list[str]:
        """Interleaved by host (as the scheduler dispatches them)."""
        by_host = self.urls_by_host()
        return [url for group in zip(*by_host) for url in group] + [
            url for group in by_host for url in group[min(map(len, by_host)):]]

    def hits(self) -> collections.Counter[str]:
        import urllib.request

        total = collections.Counter[str]()
        for base in self.bases:
            with urllib.request.urlopen(f"{base}/_stats") as response:
                total.update(json.load(response))
        return total


