"""The raw archive's index adapter (`eventstore.pack_index`, the port
`workers.archive.packs.PackIndex`): each operation, a read-only copy that writes nothing, an
index file already on disk read as it is, and errors as `OSError`."""

from __future__ import annotations

import hashlib
import sqlite3
from contextlib import closing
from pathlib import Path

import pytest
import zstandard

from eventstore.pack_index import open_pack_index
from workers.archive.packs import HEADER, ZSTD
from workers.archive.raw_archive import RawArchive, ref_of

D1, D2 = b"\x01" * 32, b"\x02" * 32


def test_each_operation(tmp_path: Path) -> None:
    index = open_pack_index(tmp_path, read_only=False)
    assert index.lookup(D1) is None and index.entries() == []
    first, end = index.pack("a.pack")
    assert end == 0 and index.pack("a.pack") == (first, 0)  # known once
    second = index.pack("b.pack")[0]
    assert index.add([(D1, first, 40, 10), (D2, second, 40, 7)], {first: 50, second: 47}) == 2
    assert index.add([(D1, second, 90, 10)], {first: 20}) == 0  # the first row is kept
    assert index.lookup(D1) == ("a.pack", 40, 10)
    assert index.pack("a.pack") == (first, 50)  # an end never moves back
    assert sorted(index.entries()) == [("a.pack", 40, 10, D1), ("b.pack", 40, 7, D2)]
    index.rewind()
    assert index.pack("a.pack") == (first, 0) and index.pack("b.pack") == (second, 0)
    index.close()


def test_a_read_only_copy_writes_nothing(tmp_path: Path) -> None:
    writer = open_pack_index(tmp_path, read_only=False)
    pack = writer.pack("a.pack")[0]
    writer.add([(D1, pack, 40, 10)], {pack: 50})
    writer.close()
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.is_file()}
    copy = open_pack_index(tmp_path, read_only=True)
    assert copy.lookup(D1) == ("a.pack", 40, 10)
    other = copy.pack("b.pack")[0]
    copy.add([(D2, other, 40, 7)], {other: 47})  # kept in memory only
    assert copy.lookup(D2) == ("b.pack", 40, 7)
    copy.close()
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.is_file()} == before
    assert open_pack_index(tmp_path / "none", read_only=True).entries() == []
    assert not (tmp_path / "none").exists()


#: the index's schema as archives on disk hold it (written before the adapter existed)
ON_DISK = """
CREATE TABLE packs (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE,
                    indexed_end INTEGER NOT NULL);
CREATE TABLE bodies (digest BLOB PRIMARY KEY, pack INTEGER NOT NULL REFERENCES packs (id),
                     offset INTEGER NOT NULL, length INTEGER NOT NULL) WITHOUT ROWID;
"""


def test_an_index_already_on_disk_is_read_as_it_is(tmp_path: Path) -> None:
    body = b"a page archived before"
    member = zstandard.ZstdCompressor().compress(body)
    digest = hashlib.sha256(body).digest()
    (tmp_path / "raw" / "packs").mkdir(parents=True)
    (tmp_path / "raw" / "packs" / "old.pack").write_bytes(
        HEADER.pack(ZSTD, digest, len(member)) + member)
    with closing(sqlite3.connect(tmp_path / "raw" / "index.sqlite")) as db:
        db.executescript(ON_DISK)
        db.execute("INSERT INTO packs VALUES (7, 'old.pack', ?)", (HEADER.size + len(member),))
        db.execute("INSERT INTO bodies VALUES (?, 7, ?, ?)", (digest, HEADER.size, len(member)))
        db.commit()
    archive = RawArchive(tmp_path, open_pack_index)
    assert archive.get(ref_of(body)) == body
    assert archive.recover() == 0  # indexed to its end already
    found = archive.verify()
    assert found.intact and (found.packs, found.records) == (1, 1)
    assert archive.put(body) == ref_of(body)  # known: not appended again
    archive.close()
    assert (tmp_path / "raw" / "packs" / "old.pack").stat().st_size == HEADER.size + len(member)
    assert list((tmp_path / "raw" / "packs").iterdir()) == [tmp_path / "raw" / "packs" / "old.pack"]


def test_errors_are_os_errors(tmp_path: Path) -> None:
    (tmp_path / "packs").mkdir()
    (tmp_path / "index.sqlite").write_bytes(b"not a database, " * 512)
    with pytest.raises(OSError, match="the archive's index"):
        open_pack_index(tmp_path, read_only=False)
