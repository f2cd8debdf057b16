"""A real webhook receiver on 127.0.0.1 for the alert tests (http.server on a thread).

It does what the README asks of a receiver: verifies the HMAC signature over the
exact body, and accepts each `X-Crawl-Ledger-Delivery` key once (a repeated key
is answered 200 without being processed again). Tests script its answers
(`statuses`) and can make it hold the first request until released (`hold`).
"""

from __future__ import annotations

import hashlib
import hmac
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Received:
    key: str
    body: bytes
    headers: dict[str, str]
    signature_ok: bool


@dataclass
class Receiver:
    secret: str
    #: answers for the next requests, in order (then 200)
    statuses: list[int] = field(default_factory=list)
    #: hold the first request until `release` (a sender killed mid-delivery)
    hold: bool = False
    requests: list[Received] = field(default_factory=list)
    accepted: list[str] = field(default_factory=list)
    holding: threading.Event = field(default_factory=threading.Event)
    released: threading.Event = field(default_factory=threading.Event)
    lock: threading.Lock = field(default_factory=threading.Lock)
    url: str = ""

    def verify(self, body: bytes, signature: str | None) -> bool:
        expected = "sha256=" + hmac.new(self.secret.encode(), body, hashlib.sha256).hexdigest()
        return signature is not None and hmac.compare_digest(expected, signature)

    def handle(self, headers: dict[str, str], body: bytes) -> int:
        key = headers.get("x-crawl-ledger-delivery", "")
        ok = not self.secret or self.verify(body, headers.get("x-crawl-ledger-signature"))
        with self.lock:
            self.requests.append(Received(key, body, headers, ok))
            status = self.statuses.pop(0) if self.statuses else 200
            first_hold = self.hold and not self.holding.is_set()
            if first_hold:
                self.holding.set()
            if status == 200 and ok and key not in self.accepted:
                self.accepted.append(key)  # processed once; a repeat is only acknowledged
        if first_hold:
            self.released.wait(60)
        return status if ok else 401

    def wait_for(self, count: int, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while len(self.requests) < count:
            if time.monotonic() > deadline:
                raise AssertionError(f"receiver got {len(self.requests)} of {count} requests")
            time.sleep(0.02)


def _handler(receiver: Receiver) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - http.server's name
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            headers = {k.lower(): v for k, v in self.headers.items()}
            status = receiver.handle(headers, body)
            try:
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()
            except OSError:
                pass  # the sender is gone (killed mid-delivery)

        def log_message(self, *args: Any) -> None:
            pass

    return Handler


@contextmanager
def receiver(secret: str = "s3cret-test-key", **options: Any) -> Iterator[Receiver]:
    box = Receiver(secret, **options)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(box))
    server.daemon_threads = True
    box.url = f"http://127.0.0.1:{server.server_address[1]}/hook"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield box
    finally:
        box.released.set()
        server.shutdown()
        server.server_close()
