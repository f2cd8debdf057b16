"""Loopback pieces for the alert security tests.

- `listener()`: a TCP port on 127.0.0.1 (and ::1 when it can take the same port) that
  nothing is allowed to reach. It never accepts while the test runs: a connection
  that was made sits completed in the kernel's accept queue, so `connections()`
  (a non-blocking drain, afterwards) counts it without any waiting.
- `redirecting(host, location)`: an HTTP server on `host` answering every request
  with `307 Location: location`.
- `serving(ledger, sender)`: the API on a free loopback port with a token per scope.
- `sender_for(allow)`: the real alert sender (guarded client + `Notifier`) allowing
  the networks `allow`.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager, contextmanager, suppress
from datetime import UTC, datetime
from functools import partial
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from api_server import api_server, bearer  # noqa: F401 - bearer is re-exported to the tests

from api.app import create_app
from api.auth import TokenStore
from ledger.bootstrap import Ledger
from runtime.clock import SystemClock
from workers.alert_delivery.notify import Notifier
from workers.fetching.addresses import AddressGuard
from workers.fetching.http import build_client

T0 = datetime(2026, 3, 1, 8, 0, tzinfo=UTC)
#: the "allowed host" of the operator's allowlist; 127.0.0.1 stays refused
ALLOWED_HOST = "127.0.0.2"
ALLOWED = [f"{ALLOWED_HOST}/32"]


class Listener:
    def __init__(self) -> None:
        self.v4 = socket.create_server(("127.0.0.1", 0), backlog=128)
        self.port = self.v4.getsockname()[1]
        self.sockets = [self.v4]
        with suppress(OSError):
            self.sockets.append(socket.create_server(("::1", self.port), family=socket.AF_INET6,
                                                     backlog=128))
        self.seen = 0

    def connections(self) -> int:
        """Connections made so far (each completed handshake waits in the accept queue)."""
        for server in self.sockets:
            server.setblocking(False)
            while True:
                try:
                    conn, _ = server.accept()
                except BlockingIOError:
                    break
                conn.close()
                self.seen += 1
        return self.seen

    def close(self) -> None:
        for server in self.sockets:
            server.close()


@contextmanager
def listener() -> Iterator[Listener]:
    box = Listener()
    try:
        yield box
    finally:
        box.close()


@contextmanager
def redirecting(host: str, location: str) -> Iterator[int]:
    """The port of a server on `host` that answers everything with a 307 to `location`."""
    class Handler(BaseHTTPRequestHandler):
        def answer(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            self.send_response(307)
            self.send_header("Location", location)
            self.send_header("Content-Length", "0")
            self.end_headers()

        do_GET = do_POST = do_PUT = answer  # noqa: N815 - http.server's names

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer((host, 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


@asynccontextmanager
async def sender_for(allow: list[str]) -> AsyncIterator[Notifier]:
    guard = AddressGuard(allow)
    async with build_client(guard=guard) as client:
        yield Notifier(client, guard)


def opener(allow: list[str]) -> Callable[[], AbstractAsyncContextManager[Notifier]]:
    return partial(sender_for, allow)


@contextmanager
def serving(ledger: Ledger, allow: list[str]) -> Iterator[tuple[str, dict[str, str]]]:
    """The API (alert sender allowing `allow`) on a free loopback port, a token per scope."""
    tokens = TokenStore(ledger.tables.tokens)
    secrets = {scope: tokens.create(scope, scope, T0)[0] for scope in ("read", "operate")}
    app = create_app(ledger, tokens, SystemClock(), alert_sender=opener(allow))
    with api_server(app) as url:
        yield url, secrets



def subscription(kind: str, url: str, secret: str | None = None) -> dict[str, Any]:
    return {"name": "hoodies", "target_kind": "search", "target": "Hoodie",
            "triggers": [{"kind": "back_in_stock"}],
            "channel": {"kind": kind, "url": url, "secret": secret}}
