"""The crawler in a child process: the embedded runner's second core.

One Python process runs one thread of Python at a time. The embedded runner's work has
two halves that each need most of a core: the crawler (fetching, parsing, extracting:
~2 ms of Python a page) and the ledger (recording each result, catching the read models
up). In one process they take turns; `CrawlProcess` runs the crawler — the same `Crawler`
that `crawler_for` builds from the same settings — in a child process, so the two halves
run at once.

The two talk over a private socket pair, in length-prefixed pickles (both ends are this
program; nothing else can reach the socket). Each call — `crawl`, `fetch_image` — is one
request and one answer, matched by number, any number in flight. Each end reads frames as
they arrive (`crawl_child.Frames`, an asyncio protocol) and sends the frames of one loop
turn in one write:

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

The child's side, and the framing both ends use, is `ledger.drivers.crawl_child`:

    python -m ledger.drivers.crawl_child FD    (started by `CrawlProcess`, never by hand)
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import socket
import subprocess
import sys
from collections.abc import Iterable
from types import TracebackType
from typing import Any

import structlog

from domain.values import CrawlOutcome, CrawlTask, ImageFailure, Policy
from ledger.drivers.crawl_child import Frames
from ledger.host.cpus import available_cpus
from ledger.settings import Settings
from workers.fetching.fetch_errors import failure
from workers.fetching.image_download import DownloadedImage
from workers.fetching.proxy_choice import HealthChange, ProxyConfig, ProxyHealth

__all__ = ["CrawlProcess", "ChildExited", "use_crawl_process"]

log = logging.getLogger(__name__)

#: how long a closing child has to finish before it is killed
_EXIT_TIMEOUT = 10.0


class ChildExited(Exception):
    """The crawl process ended while calls were in flight."""


def use_crawl_process(choice: bool | None) -> bool:
    """Whether the runner crawls in a child process: `choice`, or (None) when this
    process may use more than one CPU (`ledger.host.cpus`: its affinity and its cgroup's CPU
    quota; on one, the child only adds its messages)."""
    if choice is not None:
        return choice
    return available_cpus() > 1


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
        self._frames: Frames | None = None
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
        process, frames = self._process, self._frames
        if frames is not None:
            frames.close()
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
        if self._frames is not None:
            self._frames.send(message)

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
                sys.executable, "-m", "ledger.drivers.crawl_child", str(theirs.fileno()),
                pass_fds=(theirs.fileno(),), stdin=subprocess.DEVNULL)
        except BaseException:
            ours.close()
            raise
        finally:
            theirs.close()
        _, frames = await asyncio.get_running_loop().create_connection(Frames, sock=ours)
        self._frames = frames
        frames.send(("start", self.settings))
        ready = await frames.first()
        if ready is None:
            frames.close()
            code = await process.wait()
            raise ChildExited(f"the crawl process exited at start (exit status {code}); "
                              f"its error is on stderr")
        if ready != ("ready",):
            frames.close()
            raise ChildExited(f"the crawl process answered {ready!r} at start")
        self.started += 1
        pending = self._pending = {}
        frames.listen(lambda message: self._answer(pending, message))
        self._reading = asyncio.create_task(self._watch(process, frames, pending))
        if self.egress.pool.configs is not None:  # a new child after one died
            self._send(("pool", 0, self.egress.pool.configs))

    def _answer(self, pending: dict[int, asyncio.Future[Any]], message: Any) -> None:
        """One message from a child: an answer to one of its calls, or its pool's news."""
        kind, number, value = message
        if kind == "pool":
            self.egress.pool.report(*value)
            return
        answer = pending.pop(number, None)
        if answer is None or answer.done():
            return  # cancelled meanwhile
        if kind == "ok":
            answer.set_result(value)
        else:
            answer.set_exception(RuntimeError(f"in the crawl process: {value}"))

    async def _watch(self, process: asyncio.subprocess.Process, frames: Frames,
                     pending: dict[int, asyncio.Future[Any]]) -> None:
        """Until one child's socket closes; then its calls still waiting fail (a new
        child, started meanwhile, has its own `pending`)."""
        try:
            await frames.closed
        finally:
            frames.close()
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
