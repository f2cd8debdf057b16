"""Real HTTP servers on loopback that record every request they get.

Each `RecordingServer` listens on its own free port (bound when created, and
to be run exactly once), so several servers are
several hosts (origins) to politeness. Use them inside the test's event loop:

    async with serving(RecordingServer(), RecordingServer()) as (a, b):
        ...  a.url("/x"), a.hits
"""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass

from aiohttp import web

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@dataclass(frozen=True)
class Hit:
    method: str
    path: str
    at: float  # time.monotonic() when the request arrived
    user_agent: str


class RecordingServer:
    """An aiohttp server with per-path handlers; unknown paths get 404."""

    def __init__(self, host: str = "127.0.0.1") -> None:
        self.host = host
        self.hits: list[Hit] = []
        self.routes: dict[str, Handler] = {}
        self.bytes_sent: dict[str, int] = {}
        self.in_flight = 0
        self.peak_in_flight = 0
        # bound now, so URLs are known before the server runs; listening starts in `running`
        self._socket = socket.create_server((host, 0))
        self.port: int = self._socket.getsockname()[1]

    def route(self, path: str, handler: Handler) -> None:
        self.routes[path] = handler

    def text(self, path: str, body: str, content_type: str = "text/html") -> None:
        async def handler(_: web.Request) -> web.StreamResponse:
            return web.Response(text=body, content_type=content_type)

        self.route(path, handler)

    def url(self, path: str) -> str:
        return f"http://{self.host}:{self.port}{path}"

    def paths(self) -> list[str]:
        return [hit.path for hit in self.hits]

    async def _dispatch(self, request: web.Request) -> web.StreamResponse:
        hit = Hit(request.method, request.path_qs, time.monotonic(),
                  request.headers.get("User-Agent", ""))
        self.hits.append(hit)
        handler = self.routes.get(request.path_qs) or self.routes.get(request.path)
        if handler is None:
            return web.Response(status=404, text="not found")
        self.in_flight += 1
        self.peak_in_flight = max(self.peak_in_flight, self.in_flight)
        try:
            return await handler(request)
        finally:
            self.in_flight -= 1

    @asynccontextmanager
    async def running(self) -> AsyncIterator[RecordingServer]:
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self._dispatch)
        runner = web.AppRunner(app, handle_signals=False, shutdown_timeout=0.5)
        await runner.setup()
        await web.SockSite(runner, self._socket).start()
        try:
            yield self
        finally:
            await runner.cleanup()
            self._socket.close()


@asynccontextmanager
async def serving(*servers: RecordingServer) -> AsyncIterator[tuple[RecordingServer, ...]]:
    async with AsyncExitStack() as stack:
        for server in servers:
            await stack.enter_async_context(server.running())
        yield servers


def streaming(server: RecordingServer, key: str, total: int, chunk: int,
              declare_length: bool = False) -> Handler:
    """A handler streaming `total` bytes in chunks, recording what it sent."""

    async def handler(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/html"})
        if declare_length:
            response.content_length = total
        await response.prepare(request)
        server.bytes_sent[key] = 0
        try:
            while server.bytes_sent[key] < total:
                await response.write(b"x" * chunk)
                server.bytes_sent[key] += chunk
                await asyncio.sleep(0)
        except (ConnectionResetError, ConnectionError):
            return response  # the client hung up, as it should
        await response.write_eof()
        return response

    return handler


def trickling(interval: float, total: int) -> Handler:
    """A handler sending one byte every `interval` seconds."""

    async def handler(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/html"})
        await response.prepare(request)
        try:
            for _ in range(total):
                await response.write(b"x")
                await asyncio.sleep(interval)
        except (ConnectionResetError, ConnectionError):
            return response
        await response.write_eof()
        return response

    return handler


def status(code: int, headers: dict[str, str] | None = None) -> Handler:
    async def handler(_: web.Request) -> web.StreamResponse:
        return web.Response(status=code, headers=headers or {}, text=f"status {code}")

    return handler


def redirect(location: str, code: int = 302) -> Handler:
    async def handler(_: web.Request) -> web.StreamResponse:
        return web.Response(status=code, headers={"Location": location})

    return handler
