"""A forwarding HTTP proxy on loopback that counts the requests it carries.

It answers absolute-URI requests (`GET http://host:port/path HTTP/1.1`, what a
client sends a plain HTTP proxy) by fetching the URL itself and relaying the
answer, one request per connection. With `credentials` set it wants
`Proxy-Authorization: Basic …` and answers 407 without it.

    async with LoopbackProxy() as proxy:
        proxy.url, proxy.hits  # absolute URIs carried
"""

from __future__ import annotations

import asyncio
import base64
import socket
from types import TracebackType

import aiohttp


class LoopbackProxy:
    def __init__(self, credentials: str | None = None, port: int = 0) -> None:
        self.credentials = credentials
        self.hits: list[str] = []
        self.refused = 0
        self._socket = socket.create_server(("127.0.0.1", port))
        self.port: int = self._socket.getsockname()[1]
        self._server: asyncio.Server | None = None
        self._session: aiohttp.ClientSession | None = None

    @property
    def url(self) -> str:
        userinfo = f"{self.credentials}@" if self.credentials else ""
        return f"http://{userinfo}127.0.0.1:{self.port}"

    async def __aenter__(self) -> LoopbackProxy:
        self._session = aiohttp.ClientSession(auto_decompress=False)
        self._server = await asyncio.start_server(self._handle, sock=self._socket)
        return self

    async def __aexit__(self, *exc: type[BaseException] | BaseException | TracebackType | None
                        ) -> None:
        assert self._server is not None and self._session is not None
        self._server.close()
        await self._server.wait_closed()
        await self._session.close()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
            method, target, _ = head[0].split(" ", 2)
            headers = dict(line.split(": ", 1) for line in head[1:] if ": " in line)
            if not self._authorized(headers):
                self.refused += 1
                writer.write(b"HTTP/1.1 407 Proxy Authentication Required\r\n"
                             b"Proxy-Authenticate: Basic\r\nContent-Length: 0\r\n"
                             b"Connection: close\r\n\r\n")
                return
            self.hits.append(target)
            await self._forward(method, target, headers, writer)
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            await writer.drain()
            writer.close()

    def _authorized(self, headers: dict[str, str]) -> bool:
        if self.credentials is None:
            return True
        given = {k.lower(): v for k, v in headers.items()}.get("proxy-authorization", "")
        return given == "Basic " + base64.b64encode(self.credentials.encode()).decode()

    async def _forward(self, method: str, target: str, headers: dict[str, str],
                       writer: asyncio.StreamWriter) -> None:
        assert self._session is not None
        sent = {k: v for k, v in headers.items()
                if k.lower() not in ("host", "proxy-authorization", "connection")}
        async with self._session.request(method, target, headers=sent,
                                         allow_redirects=False) as response:
            body = await response.read()
            lines = [f"HTTP/1.1 {response.status} {response.reason}"]
            lines += [f"{k}: {v}" for k, v in response.headers.items()
                      if k.lower() not in ("content-length", "connection", "transfer-encoding")]
            lines += [f"Content-Length: {len(body)}", "Connection: close", "Via: 1.1 loopback"]
            writer.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body)


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then closed)."""
    with socket.create_server(("127.0.0.1", 0)) as sock:
        return int(sock.getsockname()[1])


class ClosingPort:
    """A loopback port that accepts connections and closes them at once, unanswered
    (a dead proxy that still listens), counting the connections it accepted."""

    def __init__(self) -> None:
        self.accepted = 0
        self._socket = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._socket.getsockname()[1]
        self._server: asyncio.Server | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def __aenter__(self) -> ClosingPort:
        self._server = await asyncio.start_server(self._handle, sock=self._socket)
        return self

    async def __aexit__(self, *exc: type[BaseException] | BaseException | TracebackType | None
                        ) -> None:
        assert self._server is not None
        self._server.close()
        await self._server.wait_closed()

    async def _handle(self, _: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.accepted += 1
        writer.close()
