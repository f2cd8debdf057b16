"""Pages archived from the event loop in groups (`workers.archive.writer`)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence
from pathlib import Path

import pytest

from eventstore.pack_index import open_pack_index
from workers.archive.raw_archive import ArchiveError, RawArchive, ref_of
from workers.archive.writer import ArchiveWriter


class Recording(RawArchive):
    """The archive, noting each group it is given and the thread that stores it; a group
    can be held back (`hold`) until the test lets it go."""

    def __init__(self, data_dir: Path) -> None:
        super().__init__(data_dir, open_pack_index)
        self.groups: list[list[bytes]] = []
        self.threads: set[int] = set()
        self.hold = threading.Event()
        self.hold.set()
        #: (a prefix, an error): the first group with a body of that prefix raises it
        self.fail: tuple[bytes, Exception] | None = None

    def put_many(self, bodies: Sequence[bytes]) -> list[str]:
        self.hold.wait(10)
        self.groups.append(list(bodies))
        self.threads.add(threading.get_ident())
        if self.fail is not None and any(body.startswith(self.fail[0]) for body in bodies):
            error, self.fail = self.fail[1], None
            raise error
        return super().put_many(bodies)


def test_pages_waiting_are_stored_together_off_the_loop(tmp_path: Path) -> None:
    archive = Recording(tmp_path)
    bodies = [f"page {n % 50}".encode() for n in range(200)]

    async def scenario() -> list[str]:
        writer = ArchiveWriter(archive)
        try:
            return await asyncio.gather(*(writer.put(body) for body in bodies))
        finally:
            writer.close()

    refs = asyncio.run(scenario())
    assert refs == [ref_of(body) for body in bodies]
    assert sorted(body for group in archive.groups for body in group) == sorted(bodies)
    # the first put starts a group alone; the others gathered meanwhile and follow in few
    assert archive.groups[0] == bodies[:1] and len(archive.groups) <= 3
    assert threading.get_ident() not in archive.threads
    reader = RawArchive(tmp_path, open_pack_index)
    assert [reader.get(ref) for ref in refs] == bodies


def test_a_group_is_at_most_max_group_bodies(tmp_path: Path) -> None:
    archive = Recording(tmp_path)

    async def scenario() -> None:
        writer = ArchiveWriter(archive, max_group=8)
        archive.hold.clear()
        first = asyncio.ensure_future(writer.put(b"first"))
        await asyncio.sleep(0)
        rest = [asyncio.ensure_future(writer.put(b"%d" % n)) for n in range(20)]
        archive.hold.set()
        await asyncio.gather(first, *rest)
        writer.close()

    asyncio.run(scenario())
    assert [len(group) for group in archive.groups] == [1, 8, 8, 4]


def test_a_failed_group_fails_each_of_its_puts_and_the_next_group_is_stored(
        tmp_path: Path) -> None:
    archive = Recording(tmp_path)

    async def scenario() -> tuple[str, list[str | BaseException], list[str]]:
        writer = ArchiveWriter(archive)
        archive.fail = (b"lost", OSError(28, "No space left on device"))
        archive.hold.clear()
        first = asyncio.ensure_future(writer.put(b"first"))  # a group alone, held
        await asyncio.sleep(0)
        lost = [asyncio.ensure_future(writer.put(b"lost %d" % n)) for n in range(3)]
        archive.hold.set()
        failed = await asyncio.gather(*lost, return_exceptions=True)
        stored = await asyncio.gather(*(writer.put(b"kept %d" % n) for n in range(3)))
        writer.close()
        return await first, failed, stored

    first, failed, stored = asyncio.run(scenario())
    assert first == ref_of(b"first")
    assert [str(error) for error in failed] == ["[Errno 28] No space left on device"] * 3
    assert [len(group) for group in archive.groups] == [1, 3, 1, 2]
    assert stored == [ref_of(b"kept %d" % n) for n in range(3)]
    assert RawArchive(tmp_path, open_pack_index).get(stored[2]) == b"kept 2"


def test_a_read_only_archive_refuses_every_put(tmp_path: Path) -> None:
    RawArchive(tmp_path, open_pack_index).put(b"there")

    async def scenario() -> None:
        writer = ArchiveWriter(RawArchive(tmp_path, open_pack_index, read_only=True))
        try:
            with pytest.raises(ArchiveError, match="read-only"):
                await writer.put(b"new")
        finally:
            writer.close()

    asyncio.run(scenario())


def test_a_cancelled_put_leaves_the_others_of_its_group(tmp_path: Path) -> None:
    archive = Recording(tmp_path)

    async def scenario() -> list[str]:
        writer = ArchiveWriter(archive)
        archive.hold.clear()
        puts = [asyncio.ensure_future(writer.put(b"body %d" % n)) for n in range(4)]
        await asyncio.sleep(0)
        puts[1].cancel()
        archive.hold.set()
        done = await asyncio.gather(*puts, return_exceptions=True)
        writer.close()
        assert isinstance(done[1], asyncio.CancelledError)
        return [ref for ref in done if isinstance(ref, str)]

    refs = asyncio.run(scenario())
    assert refs == [ref_of(b"body %d" % n) for n in (0, 2, 3)]
    assert RawArchive(tmp_path, open_pack_index).get(ref_of(b"body 1")) == b"body 1"  # stored all the same


def test_closing_while_a_group_is_written_ends_it_and_cancels_the_puts_waiting(
        tmp_path: Path) -> None:
    """A crawl process stopping under load: its crawls were cancelled, a group is being
    written and more pages wait. `close` lets the group finish and writes nothing more
    (no call on the thread once it is shut down), and a later put is refused."""
    archive = Recording(tmp_path)

    async def scenario() -> tuple[str, bool, list[dict[str, object]]]:
        loop = asyncio.get_running_loop()
        errors: list[dict[str, object]] = []
        loop.set_exception_handler(lambda _loop, context: errors.append(context))
        writer = ArchiveWriter(archive)
        archive.hold.clear()
        first = asyncio.ensure_future(writer.put(b"being written"))
        await asyncio.sleep(0)
        waiting = asyncio.ensure_future(writer.put(b"waiting"))
        await asyncio.sleep(0)
        shutdown = writer._thread.shutdown  # noqa: SLF001 - let the group go once closing

        def release_then_shutdown(wait: bool = True, **kwargs: bool) -> None:
            archive.hold.set()
            shutdown(wait, **kwargs)

        writer._thread.shutdown = release_then_shutdown  # type: ignore[method-assign]  # noqa: SLF001
        writer.close()
        ref = await first  # resolved by the group's callback, which ran after close
        with pytest.raises(RuntimeError, match="closed"):
            await asyncio.wait_for(writer.put(b"late"), 10)  # the bound: a failing run ends
        return ref, waiting.cancelled(), errors

    ref, cancelled, errors = asyncio.run(scenario())
    assert ref == ref_of(b"being written") and cancelled
    assert errors == []
    assert archive.groups == [[b"being written"]]
