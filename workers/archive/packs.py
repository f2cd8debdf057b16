"""The raw archive's packs: the record format, a writer's pack, and the index.

A pack (`raw/packs/<name>.pack`) is a run of records, appended by one writer and
never rewritten. A record: a 4-byte mark of its compression (`CLZ1`: a zstd frame;
`CLR1`: a gzip member, which packs written before zstd hold and which is read
alike), the body's 32-byte sha256, the compressed length (4 bytes, little endian),
the compressed bytes. `dd` and `zstd -d` (or `gzip -d`) read one; `scan` walks a pack
by its headers. zstd level 3: ~36 µs and ~3.4 KB for a 15 KB product page where gzip
level 1 took ~94 µs and ~3.8 KB, and compressing was the largest part of archiving
a page.

The index maps a body's sha256 to its pack, offset and length, and keeps per pack
the end up to which its records are indexed. Workers name it as a port (`PackIndex`,
opened per process by an `OpenPackIndex`); its storage is an adapter's
(`eventstore.pack_index`: `raw/index.sqlite`), handed to the archive by the
composition root.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import struct
import time
import zlib
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Protocol

import zstandard

__all__ = ["HEADER", "MARKS", "ZSTD", "GZIP_MARK", "IndexRow", "OpenPackIndex", "Pack",
           "PackIndex", "cut_short", "decompress", "scan"]

ZSTD, GZIP_MARK = b"CLZ1", b"CLR1"    # a record's compression
HEADER = struct.Struct("<4s32sI")    # compression, sha256 digest, compressed length
MARKS = (ZSTD, GZIP_MARK)
GZIP = 31                             # zlib's wbits for a gzip member (header + trailer)
MAX_BODY = 256 << 20                  # far above any fetch's or bot submission's limit
_PACK_FLAGS = (os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND
               | getattr(os, "O_CLOEXEC", 0))
#: (sha256 digest, pack id, offset of the compressed bytes, their length)
IndexRow = tuple[bytes, int, int, int]


class PackIndex(Protocol):
    """Where each packed body is: sha256 -> (pack, offset, length), and per pack the end
    up to which its records are indexed. One process's handle; safe to use under the
    archive's lock from any of its threads. An index that cannot be read or written
    raises `OSError` (whatever stores it: workers name no database driver)."""

    def lookup(self, digest: bytes) -> tuple[str, int, int] | None:
        """(pack name, offset, length) of the body with this sha256, or None."""
        ...

    def pack(self, name: str) -> tuple[int, int]:
        """(id, indexed end) of the pack named `name`, known to the index from now on."""
        ...

    def add(self, rows: Sequence[IndexRow], ends: Mapping[int, int]) -> int:
        """Index `rows` (a digest already indexed keeps its first row) and move each
        pack's indexed end up to `ends[pack id]`, in one transaction; rows added."""
        ...

    def rewind(self) -> None:
        """Every pack's indexed end back to 0 (`RawArchive.reindex` walks them again)."""
        ...

    def entries(self) -> list[tuple[str, int, int, bytes]]:
        """(pack name, offset, length, digest) of every indexed body."""
        ...

    def close(self) -> None: ...


class OpenPackIndex(Protocol):
    """Opens the index of the archive under `root` (`<data_dir>/raw`): for reading and
    writing, made where there is none; or, `read_only`, a private copy that never
    writes to the archive (what it indexes stays in memory)."""

    def __call__(self, root: Path, *, read_only: bool) -> PackIndex: ...



class Pack:
    """The pack a writer appends to: its open file and how long it is."""

    def __init__(self, pack_id: int, name: str, fd: int) -> None:
        self.id, self.name, self.fd, self.end = pack_id, name, fd, 0

    @classmethod
    def create(cls, directory: Path, index: PackIndex) -> Pack:
        for _ in range(100):
            name = f"{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}-{os.getpid()}-{os.urandom(4).hex()}.pack"
            try:
                fd = os.open(directory / name, _PACK_FLAGS, 0o600)
            except FileExistsError:
                continue
            return cls(index.pack(name)[0], name, fd)
        raise FileExistsError(f"no free pack name in {directory}")

    def write(self, record: bytes) -> None:
        view = memoryview(record)
        while view:
            written = os.write(self.fd, view)
            self.end += written
            view = view[written:]

    def close(self) -> None:
        with contextlib.suppress(OSError):
            os.close(self.fd)


def scan(path: Path, start: int = 0) -> Iterator[tuple[int, bytes, int]]:
    """(offset, sha256 digest, length) of each complete record of the pack at `path`
    from `start` whose member decompresses to bytes of that hash; ends at the first
    record that is torn, damaged or not a record."""
    with open(path, "rb") as file:
        size = os.fstat(file.fileno()).st_size
        file.seek(start)
        while True:
            header = file.read(HEADER.size)
            if len(header) < HEADER.size:
                return
            mark, digest, length = HEADER.unpack(header)
            if mark not in MARKS or file.tell() + length > size:
                return
            member = file.read(length)
            if len(member) < length:
                return
            try:
                intact = hashlib.sha256(decompress(mark, member)).digest() == digest
            except (zlib.error, zstandard.ZstdError):
                intact = False
            if not intact:
                return
            yield file.tell() - length, digest, length


def cut_short(path: Path, end: int, size: int) -> bool:
    """Whether the bytes of `path` from `end` are a record's beginning whose rest never
    arrived (rather than a whole record that is damaged)."""
    with open(path, "rb") as file:
        file.seek(end)
        header = file.read(HEADER.size)
    if len(header) < HEADER.size:  # a header cut short: its mark (or what is left of it)
        return any(mark.startswith(header[:4]) for mark in MARKS)
    mark, _digest, length = HEADER.unpack(header)
    return mark in MARKS and end + HEADER.size + length > size


def decompress(mark: bytes, stored: bytes) -> bytes:
    """The body of a record, refusing one that would be larger than `MAX_BODY` (a
    damaged or crafted frame must not make a reader allocate what it claims)."""
    if mark == ZSTD:
        size = zstandard.frame_content_size(stored)  # -1: the frame does not say
        if size > MAX_BODY:
            raise zstandard.ZstdError(f"a frame of {size} bytes: larger than any body")
        return zstandard.ZstdDecompressor().decompress(stored, max_output_size=MAX_BODY)
    inflate = zlib.decompressobj(GZIP)
    body = inflate.decompress(stored, MAX_BODY + 1)
    if len(body) > MAX_BODY:
        raise zlib.error("a gzip member larger than any body")
    if not inflate.eof:
        raise zlib.error("an incomplete gzip member")
    return body
