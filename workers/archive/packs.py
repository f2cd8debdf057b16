"""The raw archive's packs: the record format, a writer's pack, and the index.

A pack (`raw/packs/<name>.pack`) is a run of records, appended by one writer and
never rewritten. A record: a 4-byte mark of its compression (`CLZ1`: a zstd frame;
`CLR1`: a gzip member, which packs written before zstd hold and which is read
alike), the body's 32-byte sha256, the compressed length (4 bytes, little endian),
the compressed bytes. `dd` and `zstd -d` (or `gzip -d`) read one; `scan` walks a pack
by its headers. zstd level 3: ~36 µs and ~3.4 KB for a 15 KB product page where gzip
level 1 took ~94 µs and ~3.8 KB, and compressing was the largest part of archiving
a page.

The index (`raw/index.sqlite`, WAL) maps a body's sha256 to its pack, offset and
length, and keeps per pack the end up to which its records are indexed.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import sqlite3
import struct
import time
import zlib
from collections.abc import Iterator
from pathlib import Path

import zstandard

__all__ = ["HEADER", "MARKS", "ZSTD", "GZIP_MARK", "Pack", "cut_short", "decompress",
           "index_in_memory", "lookup", "open_index", "pack_row", "scan", "transaction"]

ZSTD, GZIP_MARK = b"CLZ1", b"CLR1"    # a record's compression
HEADER = struct.Struct("<4s32sI")    # compression, sha256 digest, compressed length
MARKS = (ZSTD, GZIP_MARK)
GZIP = 31                             # zlib's wbits for a gzip member (header + trailer)
MAX_BODY = 256 << 20                  # far above any fetch's or bot submission's limit
_PACK_FLAGS = (os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND
               | getattr(os, "O_CLOEXEC", 0))
_SCHEMA = """
CREATE TABLE IF NOT EXISTS packs (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    indexed_end INTEGER NOT NULL          -- bytes from the start walked and indexed
);
CREATE TABLE IF NOT EXISTS bodies (
    digest BLOB PRIMARY KEY,
    pack INTEGER NOT NULL REFERENCES packs (id),
    offset INTEGER NOT NULL,              -- of the compressed bytes
    length INTEGER NOT NULL
) WITHOUT ROWID;
"""


class Pack:
    """The pack a writer appends to: its open file and how long it is."""

    def __init__(self, pack_id: int, name: str, fd: int) -> None:
        self.id, self.name, self.fd, self.end = pack_id, name, fd, 0

    @classmethod
    def create(cls, directory: Path, db: sqlite3.Connection) -> Pack:
        for _ in range(100):
            name = f"{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}-{os.getpid()}-{os.urandom(4).hex()}.pack"
            try:
                fd = os.open(directory / name, _PACK_FLAGS, 0o600)
            except FileExistsError:
                continue
            with transaction(db):
                pack_id = db.execute("INSERT INTO packs (name, indexed_end) VALUES (?, 0)",
                                     (name,)).lastrowid
            assert pack_id is not None
            return cls(pack_id, name, fd)
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


def lookup(db: sqlite3.Connection, digest: bytes) -> tuple[str, int, int] | None:
    row = db.execute("SELECT packs.name, bodies.offset, bodies.length FROM bodies "
                     "JOIN packs ON packs.id = bodies.pack WHERE digest = ?",
                     (digest,)).fetchone()
    return None if row is None else (str(row[0]), int(row[1]), int(row[2]))


def pack_row(db: sqlite3.Connection, name: str) -> tuple[int, int]:
    """(id, indexed end) of the pack named `name`, known to the index from now on."""
    with transaction(db):
        db.execute("INSERT OR IGNORE INTO packs (name, indexed_end) VALUES (?, 0)", (name,))
        row = db.execute("SELECT id, indexed_end FROM packs WHERE name = ?", (name,)).fetchone()
    return int(row[0]), int(row[1])


@contextlib.contextmanager
def transaction(db: sqlite3.Connection) -> Iterator[None]:
    """One write transaction (the connection is in autocommit mode otherwise)."""
    db.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        with contextlib.suppress(sqlite3.Error):
            db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")


def open_index(root: Path) -> sqlite3.Connection:
    """The index under `root` (made where there is none), for reading and writing."""
    (root / "packs").mkdir(parents=True, exist_ok=True)
    db = sqlite3.connect(root / "index.sqlite", timeout=30, isolation_level=None,
                         check_same_thread=False)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=NORMAL")
    db.executescript(_SCHEMA)
    return db


def index_in_memory(root: Path) -> sqlite3.Connection:
    """A private copy of the index (empty where there is none). With no WAL file
    beside it (no writer has it open) the file is read as immutable: nothing is
    created or locked. With one, it is opened read-only, which reads the WAL through
    its shared-memory file; where that fails (a read-only copy), as immutable, without
    the rows still in the WAL: `recover` finds their records again in the packs."""
    db = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
    path = root / "index.sqlite"
    if path.exists():
        live = path.with_name(path.name + "-wal").exists()
        for mode in ("mode=ro", "immutable=1") if live else ("immutable=1",):
            try:
                with contextlib.closing(sqlite3.connect(f"{path.resolve().as_uri()}?{mode}",
                                                        uri=True)) as disk:
                    disk.backup(db)
                break
            except sqlite3.Error:
                continue
    db.executescript(_SCHEMA)
    return db
