"""Event-store calls from asyncio: a dedicated thread, group commit, patience.

The ledger is synchronous (eventsourcing), the drivers are asyncio: every ledger
call crosses into `DbThread`, so the event loop never blocks on the database.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from domain.application import CrawlLedger
from domain.recording import Recorded, Recording
from eventstore import unavailable
from runtime import metrics

__all__ = ["DbThread", "GroupCommit", "first_line", "retrying_while_unavailable"]

log = logging.getLogger(__name__)
T = TypeVar("T")


class DbThread:
    """Runs ledger calls on dedicated threads (one for SQLite: it has one writer)."""

    def __init__(self, threads: int = 1) -> None:
        self.threads = threads
        self.pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="ledger-db")
        self._groups: dict[int, GroupCommit] = {}

    async def call(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self.pool, functools.partial(fn, *args, **kwargs))

    def group_commit(self, app: CrawlLedger) -> GroupCommit:
        """The one `GroupCommit` of `app` on these threads (shared by every worker)."""
        if id(app) not in self._groups:
            self._groups[id(app)] = GroupCommit(app, self)
        return self._groups[id(app)]

    def close(self) -> None:
        self.pool.shutdown(wait=True)


class GroupCommit:
    """Records crawl results in groups: every result waiting when the database thread
    is free goes into one `CrawlLedger.record_many` call (one transaction; see
    `domain.recording`), at most `GROUP` at a time. Under load the groups grow, so
    throughput grows with load instead of latency; alone, a result is recorded at once.
    Each caller gets its own result or its own error."""

    GROUP = 64

    def __init__(self, app: CrawlLedger, db: DbThread) -> None:
        self.app, self.db = app, db
        self.waiting: list[tuple[Recording, asyncio.Future[Recorded]]] = []
        self.flushing = 0
        self._tasks: set[asyncio.Task[None]] = set()

    async def record(self, recording: Recording) -> Recorded:
        done: asyncio.Future[Recorded] = asyncio.get_running_loop().create_future()
        self.waiting.append((recording, done))
        if self.flushing < self.db.threads:
            self.flushing += 1
            task = asyncio.create_task(self._flush())  # not cancelled with one caller
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        return await done

    async def _flush(self) -> None:
        try:
            while self.waiting:
                group, self.waiting = self.waiting[:self.GROUP], self.waiting[self.GROUP:]
                try:
                    answers = await self.db.call(self.app.record_many, [r for r, _ in group])
                except BaseException as error:  # noqa: BLE001 - every caller of the group sees it
                    for _, done in group:
                        if not done.done():
                            done.set_exception(error)
                    if isinstance(error, asyncio.CancelledError):
                        raise
                    continue
                metrics.GROUP_SIZE.observe(len(group))
                for (_, done), answer in zip(group, answers):
                    if done.done():
                        continue
                    if isinstance(answer, Exception):
                        done.set_exception(answer)
                    else:
                        done.set_result(answer)
        finally:
            self.flushing -= 1


def first_line(error: BaseException) -> str:
    return (str(error).strip().splitlines() or [type(error).__name__])[0]


async def retrying_while_unavailable(call: Callable[[], Awaitable[T]], what: str,
                                     patience: float) -> T:
    """`await call()`, again (with backoff: 0.5 s doubling to 10 s) while the event store
    is unavailable (`eventstore.unavailable`), for up to `patience` seconds.

    Recording twice is safe: a result already recorded under its lease records nothing."""
    loop = asyncio.get_running_loop()
    give_up, delay = loop.time() + patience, 0.5
    while True:
        try:
            return await call()
        except Exception as error:
            if not unavailable(error) or loop.time() + delay > give_up:
                raise
            log.warning("%s: event store unavailable (%s); retrying in %.1fs",
                        what, first_line(error), delay)
        await asyncio.sleep(delay)
        delay = min(delay * 2, 10.0)
