"""How `crawl-ledger serve` runs the app: uvicorn with connection-level limits.

uvicorn bounds a request head's size (`h11_max_incomplete_event_size`), an idle
keep-alive connection (`timeout_keep_alive`) and the connections and requests in
progress (`limit_concurrency`: beyond it, 503), but not the time a client takes to send
a request head: a connection that trickles an incomplete head stays open for good.
`HeadDeadlineProtocol` closes a connection whose request head is not complete within
`head_timeout` seconds of the connection opening or of the previous response ending.
Body limits and body timeouts are the app's (`api.http_limits`).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

import h11
import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

__all__ = ["HeadDeadlineProtocol", "ServerLimits", "run_server", "server_config"]


@dataclass(frozen=True)
class ServerLimits:
    #: seconds a connection has to send a complete request head
    head_timeout: float = 10.0
    #: seconds an idle keep-alive connection stays open
    keep_alive: float = 5.0
    #: connections and requests in progress; the next is answered 503
    max_connections: int = 200
    #: bytes a request head (request line and headers) may have; a larger one is answered 400
    max_head_bytes: int = 16 * 1024


class HeadDeadlineProtocol(H11Protocol):
    """uvicorn's h11 protocol with a deadline on each request head."""

    head_timeout = ServerLimits.head_timeout

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._head_deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._await_head()

    def handle_events(self) -> None:
        super().handle_events()
        if self.conn.their_state is not h11.IDLE:  # the head arrived (or the peer is gone)
            self._cancel_head_deadline()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing() and self.conn.their_state is h11.IDLE:
            self._await_head()  # the next request's head, on a kept-alive connection

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_head_deadline()
        super().connection_lost(exc)

    def _await_head(self) -> None:
        self._cancel_head_deadline()
        self._head_deadline = self.loop.call_later(self.head_timeout, self._head_too_slow)

    def _cancel_head_deadline(self) -> None:
        if self._head_deadline is not None:
            self._head_deadline.cancel()
            self._head_deadline = None

    def _head_too_slow(self) -> None:
        self._head_deadline = None
        if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
            self.logger.info("closing a connection whose request head took over %gs",
                             self.head_timeout)
            self.transport.close()


def server_config(app: Any, host: str, port: int, limits: ServerLimits = ServerLimits(),
                  **options: Any) -> uvicorn.Config:
    """A uvicorn configuration of `app` with `limits`."""
    protocol = type("HeadDeadline", (HeadDeadlineProtocol,), {"head_timeout": limits.head_timeout})
    return uvicorn.Config(app, host=host, port=port, http=protocol,
                          timeout_keep_alive=max(1, round(limits.keep_alive)),
                          limit_concurrency=limits.max_connections,
                          h11_max_incomplete_event_size=limits.max_head_bytes, **options)


def run_server(app: Any, host: str, port: int, limits: ServerLimits = ServerLimits(),
               **options: Any) -> None:
    """Serve `app` until the process is told to stop."""
    uvicorn.Server(server_config(app, host, port, limits, **options)).run()
