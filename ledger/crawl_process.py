"""The crawler in a child process: the embedded runner's second core.

One Python process runs one thread of Python at a time. The embedded runner's work has
two halves that each need most of a core: the crawler (fetching, parsing, extracting:
~2 ms of Python a page) and the ledger (recording each result, catching the read models
up). In one process they take turns; `CrawlProcess` runs the crawler — the same `Crawler`
that `crawler_for` builds from the same settings — in a child process, so the two halves
run at once.

The two talk over a private socket pair, in length-prefixed pickles (both ends are this
program; nothing else can reach the socket). Each call — `crawl`, `fetch_image` — is one
request and one answer, matched by number, any number in flight:

- **Politeness stays whole.** The one child holds every host's robots.txt, schedule and
  backoff, as the in-process crawler does.
- **A cancelled call is cancelled in the child** (the runner cancelling crawls at its
  stop deadline).
- **Signals.** The child ignores SIGINT and SIGTERM (a terminal's Ctrl-C reaches the
  whole process group): the runner decides when crawls stop. The child exits when its
  socket closes, however the parent ends.
- **A child that dies** ends every call in flight as a retryable `worker_error` failure
  (the job is retried by its policy, as after any crawl failure); the next call starts a
  new child.
- **Heartbeats** report the runner's memory and CPU with its crawl process's
  (`process_stats`).
- **Log lines** written in the child carry the calling task's context (job, store, lease,
  worker ids), as in-process crawls do.
- **The proxy pool** lives in the child, beside the crawler that routes through it. The
  child sends its health changes and counters after each call (only when it has
  proxies); `egress.pool` here keeps them for the runner's `ProxyKeeper`, and
  `pool.update` sends the ledger's view to the child.

    python -m ledger.crawl_process FD    (started by `CrawlProcess`, never by hand)
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import os
import pickle
import signal
import socket
import struct
import subprocess
import sys
from collections.abc import Iterable
from types import TracebackType
from typing import Any

import structlog

from domain.values import CrawlOutcome, CrawlTask, ImageFailure, Policy
from ledger.settings import Settings
from workers.errors import failure
from workers.images import DownloadedImage
from workers.proxies import HealthChange, ProxyConfig, ProxyHealth

__all__ = ["CrawlProcess", "ChildExited", "use_crawl_process"]

log = logging.getLogger(__name__)

_HEADER = struct.Struct("!I")
#: how long a closing child has to finish before it is killed
_EXIT_TIMEOUT = 10.0


class ChildExited(Exception):
    """The crawl process ended while calls were in flight."""


def use_crawl_process(choice: bool | None) -> bool:
    """Whether the runner crawls in a child process: `choice`, or (None) when this
    process may run on more than one CPU (on one, the child only adds its messages)."""
    if choice is not None:
        return choice
    affinity = getattr(os, "sched_getaffinity", None)  # Linux; elsewhere the machine's count
    return (len(affinity(0)) if affinity is not None else os.cpu_count() or 1) > 1


def _frame(message: Any) -> bytes:
    body = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    return _HEADER.pack(len(body)) + body


async def _read(reader: asyncio.StreamReader) -> Any:
    (size,) = _HEADER.unpack(await reader.readexactly(_HEADER.size))
    return pickle.loads(await reader.readexactly(size))  # noqa: S301 - our own child's socket


class RemotePool:
    """The child's proxy pool as the runner's `ProxyKeeper` sees it: the health changes
    and counters the child reported, and `update` sent to the child."""

    def __init__(self, send: Any) -> None:
        self._send = send
        self._changes: list[HealthChange] = []
        self._healths: list[ProxyHealth] = []
        #: the ledger's view last sent (a new child gets it at once)
        self.configs: list[ProxyConfig] | None = None

    def report(self, changes: list[HealthChange], healths: list[ProxyHealth]) -> None:
        self._changes.extend(changes)
        self._healths = healths

    def drain_changes(self) -> list[HealthChange]:
        changes, self._changes = self._changes, []
        return changes

    def proxies(self) -> list[ProxyHealth]:
        return list(self._healths)

    def update(self, configs: Iterable[ProxyConfig]) -> None:
        self.configs = list(configs)
        self._send(("pool", 0, self.configs))


class _Egress:
    def __init__(self, pool: RemotePool) -> None:
        self.pool = pool


class CrawlProcess:
    """A `CrawlerPort` and `ImagePort` whose crawler runs in a child process.

        async with CrawlProcess(settings) as crawler:
            outcome = await crawler.crawl(task)
    """

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._numbers = itertools.count(1)
        self._pending: dict[int, asyncio.Future[Any]] = {}
        self._process: asyncio.subprocess.Process | None = None
        self._writer: asyncio.StreamWriter | None = None
        self._reading: asyncio.Task[None] | None = None
        self._starting: asyncio.Task[None] | None = None
        self._closing = False
        self.egress = _Egress(RemotePool(self._send))
        #: children started so far (the first, and one after each that died)
        self.started = 0

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    async def __aenter__(self) -> CrawlProcess:
        await self._ensure_started()
        return self

    async def __aexit__(self, kind: type[BaseException] | None, error: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.close()

    async def crawl(self, task: CrawlTask) -> CrawlOutcome:
        try:
            outcome: CrawlOutcome = await self._call("crawl", task,
                                                     structlog.contextvars.get_contextvars())
        except ChildExited as exited:
            return failure("worker_error", str(exited))
        return outcome

    async def fetch_image(self, url: str, policy: Policy) -> DownloadedImage | ImageFailure:
        try:
            found: DownloadedImage | ImageFailure = await self._call("image", url, policy)
        except ChildExited as exited:
            return ImageFailure(url=url, kind="worker_error", reason=str(exited))
        return found

    async def process_stats(self) -> tuple[int, float]:
        """(peak resident bytes, CPU seconds) of the crawl process; (0, 0.0) while it is
        down (a heartbeat reports what runs)."""
        try:
            stats: tuple[int, float] = await self._call("stats")
        except ChildExited:
            return 0, 0.0
        return stats

    async def close(self) -> None:
        """Ask the child to exit (it finishes nothing: callers have their answers or were
        cancelled), wait for it, kill it after `_EXIT_TIMEOUT`."""
        self._closing = True
        process, writer = self._process, self._writer
        if writer is not None:
            writer.close()
        if process is not None and process.returncode is None:
            try:
                await asyncio.wait_for(process.wait(), _EXIT_TIMEOUT)
            except TimeoutError:
                log.warning("crawl process %s did not exit: killing it", process.pid)
                process.kill()
                await process.wait()
        if self._reading is not None:
            await asyncio.gather(self._reading, return_exceptions=True)
        _fail(self._pending, ChildExited("the crawl process was closed"))

    # -- the parent's side of the socket ------------------------------------------------

    async def _call(self, kind: str, *args: Any) -> Any:
        await self._ensure_started()
        pending = self._pending  # this child's calls (a new child gets a new dict)
        number = next(self._numbers)
        answer = asyncio.get_running_loop().create_future()
        pending[number] = answer
        self._send((kind, number, *args))
        try:
            return await answer
        except asyncio.CancelledError:
            if pending.pop(number, None) is not None:
                self._send(("cancel", number))
            raise

    def _send(self, message: Any) -> None:
        if self._writer is not None and not self._writer.is_closing():
            self._writer.write(_frame(message))

    async def _ensure_started(self) -> None:
        if self._closing:
            raise ChildExited("the crawl process was closed")
        if self._process is not None and self._process.returncode is None and self._reading \
                and not self._reading.done():
            return
        if self._starting is None or self._starting.done():
            self._starting = asyncio.create_task(self._start())
        await asyncio.shield(self._starting)

    async def _start(self) -> None:
        ours, theirs = socket.socketpair()
        try:
            process = self._process = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "ledger.crawl_process", str(theirs.fileno()),
                pass_fds=(theirs.fileno(),), stdin=subprocess.DEVNULL)
        except BaseException:
            ours.close()
            raise
        finally:
            theirs.close()
        reader, writer = await asyncio.open_connection(sock=ours)
        self._writer = writer
        writer.write(_frame(("start", self.settings)))
        try:
            ready = await _read(reader)
        except (asyncio.IncompleteReadError, ConnectionError):
            writer.close()
            code = await process.wait()
            raise ChildExited(f"the crawl process exited at start (exit status {code}); "
                              f"its error is on stderr") from None
        if ready != ("ready",):
            writer.close()
            raise ChildExited(f"the crawl process answered {ready!r} at start")
        self.started += 1
        self._pending = {}
        self._reading = asyncio.create_task(self._read_answers(process, reader, writer,
                                                               self._pending))
        if self.egress.pool.configs is not None:  # a new child after one died
            self._send(("pool", 0, self.egress.pool.configs))

    async def _read_answers(self, process: asyncio.subprocess.Process,
                            reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                            pending: dict[int, asyncio.Future[Any]]) -> None:
        """Answers from one child, until its socket closes; then its calls still waiting
        fail (a new child, started meanwhile, has its own `pending`)."""
        try:
            while True:
                kind, number, value = await _read(reader)
                if kind == "pool":
                    self.egress.pool.report(*value)
                    continue
                answer = pending.pop(number, None)
                if answer is None or answer.done():
                    continue  # cancelled meanwhile
                if kind == "ok":
                    answer.set_result(value)
                else:
                    answer.set_exception(RuntimeError(f"in the crawl process: {value}"))
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()
            code = await process.wait()
            if not self._closing:
                log.error("the crawl process exited (status %s) with %d calls in flight; the "
                          "next call starts a new one", code, len(pending))
            _fail(pending, ChildExited(f"the crawl process exited (status {code}) during the "
                                       f"call"))


def _fail(pending: dict[int, asyncio.Future[Any]], error: ChildExited) -> None:
    """End every call still waiting on a child with `error`."""
    for answer in list(pending.values()):
        if not answer.done():
            answer.set_exception(error)
    pending.clear()


# -- the child's side ---------------------------------------------------------------------

class _Child:
    """Serves calls on the socket with one `Crawler` until the socket closes."""

    def __init__(self, crawler: Any, writer: asyncio.StreamWriter) -> None:
        self.crawler = crawler
        self.writer = writer
        self.running: dict[int, asyncio.Task[None]] = {}

    async def serve(self, reader: asyncio.StreamReader) -> None:
        try:
            while True:
                kind, number, *args = await _read(reader)
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
            frame = _frame(message)
        except Exception as error:  # noqa: BLE001 - an answer that cannot be sent is an error
            frame = _frame(("error", number, f"the answer could not be sent: {error}"))
        pool = self._pool()
        if pool is not None and pool.proxies():
            self.writer.write(_frame(("pool", 0, (pool.drain_changes(), pool.proxies()))))
        self.writer.write(frame)
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
    kind, settings = await _read(reader)
    if kind != "start":
        raise SystemExit(f"crawl process: expected start, got {kind!r}")
    async with crawler_for(settings) as crawler:
        writer.write(_frame(("ready",)))
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
