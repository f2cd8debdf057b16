"""The raw archive's index (the port `workers.archive.packs.PackIndex`, met structurally)
as an SQLite file beside its packs.

`<data_dir>/raw/index.sqlite` (WAL) has two tables: `packs` (id, name, the end up to
which its records are indexed) and `bodies` (sha256 digest -> pack id, offset and
length of the compressed bytes). It is a file of the archive, like the packs: always
SQLite whatever the event store, because its rows point at pack files of one data
directory, which only a process that has that directory can read. An index lost or
damaged is rebuilt from the packs (`crawl-ledger raw reindex`).

Readers that must not write (an auditor's `raw get`/`raw verify`, a read-only copy)
open a private in-memory copy (`read_only=True`).
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

__all__ = ["SQLitePackIndex", "open_pack_index"]

#: (sha256 digest, pack id, offset of the compressed bytes, their length)
IndexRow = tuple[bytes, int, int, int]

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


@contextlib.contextmanager
def _errors() -> Iterator[None]:
    """SQLite's errors as the port's `OSError` (workers name no database driver)."""
    try:
        yield
    except sqlite3.Error as error:
        raise OSError(f"the archive's index: {error}") from error


class SQLitePackIndex:
    """One process's connection to the index (autocommit; writes in explicit
    transactions)."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db

    def lookup(self, digest: bytes) -> tuple[str, int, int] | None:
        with _errors():
            row = self.db.execute("SELECT packs.name, bodies.offset, bodies.length FROM bodies "
                                  "JOIN packs ON packs.id = bodies.pack WHERE digest = ?",
                                  (digest,)).fetchone()
        return None if row is None else (str(row[0]), int(row[1]), int(row[2]))

    def pack(self, name: str) -> tuple[int, int]:
        with _errors(), self._transaction():
            self.db.execute("INSERT OR IGNORE INTO packs (name, indexed_end) VALUES (?, 0)",
                            (name,))
            row = self.db.execute("SELECT id, indexed_end FROM packs WHERE name = ?",
                                  (name,)).fetchone()
        return int(row[0]), int(row[1])

    def add(self, rows: Sequence[IndexRow], ends: Mapping[int, int]) -> int:
        with _errors(), self._transaction():
            before = self.db.total_changes
            self.db.executemany("INSERT OR IGNORE INTO bodies VALUES (?, ?, ?, ?)", rows)
            added = self.db.total_changes - before  # an ignored row changes nothing
            self.db.executemany("UPDATE packs SET indexed_end = max(indexed_end, ?) "
                                "WHERE id = ?", [(end, pack) for pack, end in ends.items()])
        return added

    def rewind(self) -> None:
        with _errors(), self._transaction():
            self.db.execute("UPDATE packs SET indexed_end = 0")

    def entries(self) -> list[tuple[str, int, int, bytes]]:
        with _errors():
            rows = self.db.execute("SELECT packs.name, bodies.offset, bodies.length, "
                                   "bodies.digest FROM bodies JOIN packs "
                                   "ON packs.id = bodies.pack").fetchall()
        return [(str(name), int(offset), int(length), bytes(digest))
                for name, offset, length, digest in rows]

    def close(self) -> None:
        self.db.close()

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[None]:
        """One write transaction (the connection is in autocommit mode otherwise)."""
        self.db.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            with contextlib.suppress(sqlite3.Error):
                self.db.execute("ROLLBACK")
            raise
        self.db.execute("COMMIT")


def open_pack_index(root: Path, *, read_only: bool) -> SQLitePackIndex:
    """The index under `root` (`<data_dir>/raw`): `workers.archive.packs.OpenPackIndex`."""
    with _errors():
        return SQLitePackIndex(_in_memory(root) if read_only else _on_disk(root))


def _on_disk(root: Path) -> sqlite3.Connection:
    """The index file (made where there is none), for reading and writing."""
    (root / "packs").mkdir(parents=True, exist_ok=True)
    db = sqlite3.connect(root / "index.sqlite", timeout=30, isolation_level=None,
                         check_same_thread=False)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=NORMAL")
    db.executescript(_SCHEMA)
    return db


def _in_memory(root: Path) -> sqlite3.Connection:
    """A private copy of the index (empty where there is none). With no WAL file
    beside it (no writer has it open) the file is read as immutable: nothing is
    created or locked. With one, it is opened read-only, which reads the WAL through
    its shared-memory file; where that fails (a read-only copy), as immutable, without
    the rows still in the WAL: `RawArchive.recover` finds their records again in the
    packs."""
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
