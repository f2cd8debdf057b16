"""An ASGI app served by uvicorn on a free loopback port, in a thread: the API and
dashboard tests' server (real HTTP, no test client)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import uvicorn

from runtime.clock import SystemClock
from runtime.ledger import Ledger
from runtime.remote import BotPages
from workers.crawl_pages import PageReader
from workers.extraction.adapters import REGISTRY


@contextmanager
def api_server(app: Any) -> Iterator[str]:
    """The app's base URL while it serves; it stops on exit."""
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        assert time.monotonic() < deadline, "the API did not start"
        time.sleep(0.02)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(10)


def bearer(secret: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {secret}"}


@contextmanager
def bot_pages(ledger: Ledger, lease_ttl: float = 600.0) -> Iterator[BotPages]:
    """The bot path of an API over `ledger`, reading pages as `crawl-ledger serve` does
    (the built-in adapters, the default limits); closed on exit."""
    pages = BotPages(ledger, PageReader(REGISTRY), SystemClock(), forget_after=4 * lease_ttl)
    try:
        yield pages
    finally:
        pages.close()
