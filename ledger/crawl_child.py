"""The crawl process's side of `ledger.crawl_process`: it serves `crawl`, `image` and
`stats` calls with one `Crawler` until its socket closes, and the length-prefixed
pickles both ends write (see `ledger.crawl_process` for the whole protocol).

    python -m ledger.crawl_child FD    (started by `CrawlProcess`, never by hand)
"""

from __future__ import annotations

import asyncio
import os
import pickle
import signal
import socket
import struct
import sys
from typing import Any

import structlog

__all__ = ["frame", "main", "read_frame"]

_HEADER = struct.Struct("!I")


def frame(message: Any) -> bytes:
    """`message` as the bytes one end writes: its length, then its pickle."""
    body = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    return _HEADER.pack(len(body)) + body


async def read_frame(reader: asyncio.StreamReader) -> Any:
    """The next message the other end wrote (`frame`)."""
    (size,) = _HEADER.unpack(await reader.readexactly(_HEADER.size))
    return pickle.loads(await reader.readexactly(size))  # noqa: S301 - our own socket pair


class _Child:
    """Serves calls on the socket with one `Crawler` until the socket closes."""

    def __init__(self, crawler: Any, writer: asyncio.StreamWriter) -> None:
        self.crawler = crawler
        self.writer = writer
        self.running: dict[int, asyncio.Task[None]] = {}

    async def serve(self, reader: asyncio.StreamReader) -> None:
        try:
            while True:
                kind, number, *args = await read_frame(reader)
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
        except (asyncio.IncompleteReadError, ConnectionError):
            pass  # the parent closed the socket (or ended): stop
        finally:
            for task in self.running.values():
                task.cancel()
            await asyncio.gather(*self.running.values(), return_exceptions=True)

    async def _answer(self, kind: str, number: int, args: list[Any]) -> None:
        try:
            if kind == "crawl":
                task, context = args
                with structlog.contextvars.bound_contextvars(**context):
                    value = await self.crawler.crawl(task)
            elif kind == "image":
                value = await self.crawler.fetch_image(*args)
            elif kind == "stats":
                from runtime.registry import process_stats  # at the first heartbeat, not start

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
        try:
            data = frame(message)
        except Exception as error:  # noqa: BLE001 - an answer that cannot be sent is an error
            data = frame(("error", number, f"the answer could not be sent: {error}"))
        pool = self._pool()
        if pool is not None and pool.proxies():
            self.writer.write(frame(("pool", 0, (pool.drain_changes(), pool.proxies()))))
        self.writer.write(data)
        try:
            await self.writer.drain()
        except ConnectionError:
            pass  # the parent is gone: `serve` ends on the closed socket

    def _pool(self) -> Any:
        egress = self.crawler.egress
        return egress.pool if egress is not None else None


async def _child(fd: int) -> None:
    from ledger.crawlers import crawler_for

    reader, writer = await asyncio.open_connection(sock=socket.socket(fileno=fd))
    kind, settings = await read_frame(reader)
    if kind != "start":
        raise SystemExit(f"crawl process: expected start, got {kind!r}")
    async with crawler_for(settings) as crawler:
        writer.write(frame(("ready",)))
        await writer.drain()
        await _Child(crawler, writer).serve(reader)
    writer.close()


def main(argv: list[str]) -> int:
    import uvloop  # the loop the runner and the crawler are measured on

    from ledger.logs import configure_logging
    from ledger.redact import redacting_output

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
