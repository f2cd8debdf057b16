"""The crawl process's side of `ledger.drivers.crawl_process`: it serves `crawl`, `image` and
`stats` calls with one `Crawler` until its socket closes, and `Frames`, the
length-prefixed pickles both ends write (see `ledger.drivers.crawl_process` for the whole
protocol).

    python -m ledger.drivers.crawl_child FD    (started by `CrawlProcess`, never by hand)
"""

from __future__ import annotations

import asyncio
import gc
import os
import pickle
import signal
import socket
import struct
import sys
import threading
from collections.abc import Callable
from typing import Any, cast

import structlog

__all__ = ["Frames", "frame", "main"]

_HEADER = struct.Struct("!I")


def frame(message: Any) -> bytes:
    """`message` as the bytes one end writes: its length, then its pickle."""
    body = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    return _HEADER.pack(len(body)) + body


class Frames(asyncio.Protocol):
    """One end of the socket pair: each whole frame read is handed to `on_message` as
    it arrives, and the frames sent within one turn of the event loop leave in one
    write (a call or an answer each, tens of them at a time under load: one system call
    and one wake-up of the other end instead of one each, and no coroutine a frame).

    Nothing waits for the other end to drain: at most the runner's leased jobs are in
    flight, each call and answer a few kB."""

    def __init__(self) -> None:
        self._on_message: Callable[[Any], None] | None = None
        #: messages read before anyone listened (the other end may write at once)
        self._unheard: list[Any] = []
        self._loop = asyncio.get_running_loop()
        self._loop_thread = threading.get_ident()
        self.closed: asyncio.Future[None] = self._loop.create_future()
        self._transport: asyncio.Transport | None = None
        self._received = bytearray()
        self._outgoing: list[bytes] = []

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = cast(asyncio.Transport, transport)  # uvloop's is not a subclass

    def data_received(self, data: bytes) -> None:
        received = self._received
        received += data
        start, end = 0, len(received)
        while end - start >= _HEADER.size:
            (size,) = _HEADER.unpack_from(received, start)
            body = start + _HEADER.size
            if end - body < size:
                break
            message = pickle.loads(received[body:body + size])  # noqa: S301 - our socket pair
            start = body + size
            if self._on_message is None:
                self._unheard.append(message)
            else:
                self._on_message(message)
        del received[:start]

    def listen(self, on_message: Callable[[Any], None]) -> None:
        """Hand every message from now on to `on_message`, first those not heard yet."""
        self._on_message = on_message
        while self._unheard and self._on_message is on_message:
            on_message(self._unheard.pop(0))

    async def first(self) -> Any:
        """The first message not heard yet, or None when the other end closes first; the
        ones after it wait for the next listener."""
        first: asyncio.Future[Any] = asyncio.get_running_loop().create_future()

        def receive(message: Any) -> None:
            first.set_result(message)
            self._on_message = None

        self.listen(receive)
        await asyncio.wait([first, self.closed], return_when=asyncio.FIRST_COMPLETED)
        return first.result() if first.done() else None

    def connection_lost(self, error: Exception | None) -> None:
        if not self.closed.done():
            self.closed.set_result(None)

    @property
    def is_closing(self) -> bool:
        return self._transport is None or self._transport.is_closing()

    def send(self, message: Any) -> None:
        """Send `message` with the others of this loop turn (dropped once closing); from
        another thread, on the loop's next turn."""
        if threading.get_ident() != self._loop_thread:
            self._loop.call_soon_threadsafe(self.send, message)
            return
        if self.is_closing:
            return
        data = frame(message)
        if not self._outgoing:
            self._loop.call_soon(self._flush)
        self._outgoing.append(data)

    def close(self) -> None:
        """Send what is waiting, then close the socket."""
        self._flush()
        if self._transport is not None:
            self._transport.close()

    def _flush(self) -> None:
        outgoing, self._outgoing = self._outgoing, []
        if outgoing and not self.is_closing:
            assert self._transport is not None
            self._transport.write(b"".join(outgoing))


class _Child:
    """Serves calls on the socket with one `Crawler` until the socket closes."""

    def __init__(self, crawler: Any, frames: Frames) -> None:
        self.crawler = crawler
        self.frames = frames
        self.running: dict[int, asyncio.Task[None]] = {}

    async def serve(self) -> None:
        self.frames.listen(self._received)
        try:
            await self.frames.closed  # the parent closed the socket (or ended): stop
        finally:
            for task in self.running.values():
                task.cancel()
            await asyncio.gather(*self.running.values(), return_exceptions=True)

    def _received(self, message: Any) -> None:
        kind, number, *args = message
        if kind == "cancel":
            task = self.running.pop(number, None)
            if task is not None:
                task.cancel()
        elif kind == "pool":
            pool = self._pool()
            if pool is not None:
                pool.update(args[0])
        else:
            self.running[number] = asyncio.create_task(self._answer(kind, number, args))

    async def _answer(self, kind: str, number: int, args: list[Any]) -> None:
        try:
            if kind == "crawl":
                task, context = args
                with structlog.contextvars.bound_contextvars(**context):
                    value = await self.crawler.crawl(task)
            elif kind == "image":
                value = await self.crawler.fetch_image(*args)
            elif kind == "stats":
                from runtime.heartbeats import process_stats  # at the first heartbeat, not start

                value = process_stats()
            else:
                raise ValueError(f"unknown call {kind!r}")
            message: Any = ("ok", number, value)
        except asyncio.CancelledError:
            return
        except Exception as error:  # noqa: BLE001 - the caller gets it, as in-process
            message = ("error", number, f"{type(error).__name__}: {error}")
        finally:
            self.running.pop(number, None)
        pool = self._pool()
        if pool is not None and pool.proxies():
            self.frames.send(("pool", 0, (pool.drain_changes(), pool.proxies())))
        try:
            self.frames.send(message)
        except Exception as error:  # noqa: BLE001 - an answer that cannot be sent is an error
            self.frames.send(("error", number, f"the answer could not be sent: {error}"))

    def _pool(self) -> Any:
        egress = self.crawler.egress
        return egress.pool if egress is not None else None


async def _child(fd: int) -> None:
    from ledger.crawlers import crawler_for

    _, frames = await asyncio.get_running_loop().create_connection(
        Frames, sock=socket.socket(fileno=fd))
    start = await frames.first()
    if start is None:
        return  # the parent went away before it asked anything
    kind, settings = start
    if kind != "start":
        raise SystemExit(f"crawl process: expected start, got {kind!r}")
    async with crawler_for(settings) as crawler:
        # what exists now (the modules, the crawler, its clients) lives as long as the
        # process: out of the collector's sight, a full collection walks only what the
        # crawls allocate (~8 ms instead of ~30 ms each; half the process's collecting)
        gc.freeze()
        frames.send(("ready",))
        await _Child(crawler, frames).serve()
    frames.close()


def main(argv: list[str]) -> int:
    import uvloop  # the loop the runner and the crawler are measured on

    from ledger.host.logs import configure_logging
    from ledger.host.memory import keep_freed_memory_small
    from ledger.host.redact import redacting_output

    keep_freed_memory_small()  # the crawler gives its large pages' memory back
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, signal.SIG_IGN)  # the parent decides when crawls stop
    with redacting_output(os.environ):
        try:
            configure_logging(os.environ, "run")
            uvloop.run(_child(int(argv[0])))
        except Exception as error:  # noqa: BLE001 - one line, as the CLI reports an error
            lines = str(error).strip().splitlines() or [type(error).__name__]
            print(f"crawl-ledger: the crawl process: {lines[0]}", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":  # pragma: no cover - the child's entry point
    sys.exit(main(sys.argv[1:]))
