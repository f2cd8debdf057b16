"""The access log: one line per HTTP request `serve` answered.

Each line holds the time, the client address, the method, the path, the names of the
query parameters (never their values: a query may carry a token), the status, the bytes
of the response body, the time taken and the user agent (cut to 200 characters). The
request's credentials never appear. `serve` writes it to a file (JSON lines, reopened when
logrotate moves it) or through the process's own logging.
"""

from __future__ import annotations

import logging
import time
from datetime import UTC, datetime
from typing import Any
from urllib.parse import parse_qsl

from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["AccessLog", "access_line"]

#: the longest user agent kept
AGENT_CHARS = 200


class AccessLog:
    """ASGI middleware: after each HTTP response, one `logger.info` with the request's line
    (the fields of `access_line` as the record's `extra`, the line as its message)."""

    def __init__(self, app: ASGIApp, logger: logging.Logger) -> None:
        self.app = app
        self.logger = logger

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started, status, sent = time.perf_counter(), 500, 0

        async def send_counted(message: Message) -> None:
            nonlocal status, sent
            if message["type"] == "http.response.start":
                status = int(message["status"])
            elif message["type"] == "http.response.body":
                sent += len(message.get("body", b""))
            await send(message)

        try:
            await self.app(scope, receive, send_counted)
        finally:
            fields = access_line(scope, status, sent, time.perf_counter() - started)
            self.logger.info("%s %s %s", fields["method"], fields["path"], fields["status"],
                             extra={"access": fields})


def access_line(scope: Scope, status: int, sent: int, seconds: float) -> dict[str, Any]:
    """The logged fields of one request (no query values, no credentials)."""
    client = scope.get("client") or ("", 0)
    query = scope.get("query_string", b"").decode("latin-1")
    headers = dict(scope.get("headers") or ())
    agent = headers.get(b"user-agent", b"").decode("latin-1")[:AGENT_CHARS]
    return {
        "ts": datetime.now(UTC).isoformat(timespec="milliseconds"),
        "client": client[0],
        "method": str(scope.get("method", ""))[:16],
        "path": scope.get("path", ""),
        "query_keys": sorted({key for key, _ in parse_qsl(query, keep_blank_values=True)}),
        "status": status,
        "bytes": sent,
        "ms": round(seconds * 1000, 1),
        "agent": agent,
    }
