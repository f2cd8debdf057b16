"""Storing pages in the raw archive from the event loop, in groups.

A crawler hands every page it fetched to `ArchiveWriter.put` and awaits the ref. The
writer keeps the event loop free of the archive's work (hashing, compressing, the
pack's write and the index's commit) by doing it on its own thread, and writes the
bodies waiting there in groups: while one group is written, the next gathers, and
each group is stored with one `RawArchive.put_many` (one lock, one index
transaction). A page stored alone spends most of its time committing its index row,
and a thread woken for each page costs about as much again (docs/benchmarks.md).

A ref is handed out only once its group's index rows are committed, as with
`RawArchive.put`; when a group fails (a full disk), every `put` of it raises that
error.
"""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor

from workers.archive.raw_archive import RawArchive

__all__ = ["ArchiveWriter"]

#: bodies written together at most (a group is what gathered while the last was written)
MAX_GROUP = 128


class ArchiveWriter:
    """Puts bodies into `archive` on one thread, in groups; `close` ends the thread."""

    def __init__(self, archive: RawArchive, max_group: int = MAX_GROUP) -> None:
        self._archive = archive
        self._max_group = max_group
        self._thread = ThreadPoolExecutor(1, thread_name_prefix="archive")
        self._waiting: list[tuple[bytes, asyncio.Future[str]]] = []
        self._writing = False
        self._closed = False

    async def put(self, body: bytes) -> str:
        """`body`'s ref, once it is stored (see `RawArchive.put`)."""
        if self._closed:
            raise RuntimeError("the archive writer is closed")
        future: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        self._waiting.append((body, future))
        if not self._writing:
            self._write_next()
        return await future

    def close(self) -> None:
        """End the thread, after the group being written; the puts still waiting (their
        crawls were stopped) are cancelled, not written."""
        self._closed = True
        self._thread.shutdown(wait=True)

    def _write_next(self) -> None:
        group = self._waiting[:self._max_group]
        del self._waiting[:self._max_group]
        self._writing = True
        written = asyncio.get_running_loop().run_in_executor(
            self._thread, self._archive.put_many, [body for body, _ in group])
        written.add_done_callback(lambda done: self._written(group, done))

    def _written(self, group: list[tuple[bytes, asyncio.Future[str]]],
                 done: asyncio.Future[list[str]]) -> None:
        self._writing = False
        if done.cancelled():  # the loop is going away
            for _, future in group:
                future.cancel()
        elif (error := done.exception()) is not None:
            for _, future in group:
                if not future.done():
                    future.set_exception(error)
        else:
            for (_, future), ref in zip(group, done.result(), strict=True):
                if not future.done():  # its crawl was cancelled: the body is stored anyway
                    future.set_result(ref)
        if self._waiting and self._closed:
            for _, future in self._waiting:
                future.cancel()
            self._waiting.clear()
        elif self._waiting:
            self._write_next()
