"""The operations API on a free loopback port, for the security tests (a real uvicorn)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import uvicorn

from api.app import create_app
from api.auth import TokenStore
from ledger.bootstrap import Ledger
from runtime.clock import SystemClock


@contextmanager
def api_on_loopback(ledger: Ledger) -> Iterator[tuple[str, TokenStore]]:
    """(the API's base URL, its token store); the server stops on exit."""
    tokens = TokenStore(ledger.db)
    server = uvicorn.Server(uvicorn.Config(create_app(ledger, tokens, SystemClock()),
                                           host="127.0.0.1", port=0, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        assert time.monotonic() < deadline, "the API did not start"
        time.sleep(0.02)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}", tokens
    finally:
        server.should_exit = True
        thread.join(10)


def bearer(secret: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {secret}"}
