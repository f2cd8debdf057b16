"""The content-addressed raw archive."""

from __future__ import annotations

import gzip
import hashlib
import multiprocessing
import os
import struct
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import zstandard

from eventstore.pack_index import SQLitePackIndex, open_pack_index
from workers.archive.raw_archive import ArchiveError, RawArchive, content_hash, ref_of

BODY = b"<html><body>Blue Dream 3.5g $45</body></html>"


def packs(root: Path) -> list[Path]:
    return sorted((root / "raw" / "packs").glob("*.pack"))


def records(pack: Path) -> list[tuple[bytes, bytes]]:
    """(sha256 digest, body) of every record of `pack`, read by its format alone."""
    data, found, at = pack.read_bytes(), [], 0
    while at < len(data):
        mark, digest, length = struct.unpack_from("<4s32sI", data, at)
        member = data[at + 40:at + 40 + length]
        assert mark in (b"CLZ1", b"CLR1")
        found.append((digest, zstandard.ZstdDecompressor().decompress(member)
                      if mark == b"CLZ1" else gzip.decompress(member)))
        at += 40 + length
    return found


def test_put_returns_sha256_ref_and_appends_a_zstd_record_to_a_pack(tmp_path: Path) -> None:
    archive = RawArchive(tmp_path, open_pack_index)
    ref = archive.put(BODY)
    digest = hashlib.sha256(BODY)
    assert ref == f"sha256:{digest.hexdigest()}"
    [pack] = packs(tmp_path)
    assert pack.read_bytes()[:36] == b"CLZ1" + digest.digest()
    assert records(pack) == [(digest.digest(), BODY)]
    assert archive.get(ref) == BODY
    assert sorted(p.name for p in (tmp_path / "raw").iterdir() if p.is_dir()) == ["packs"]


def test_many_bodies_go_to_one_pack_and_a_new_one_past_its_size(tmp_path: Path) -> None:
    archive = RawArchive(tmp_path, open_pack_index, pack_bytes=4096)
    bodies = [f"page {n} ".encode() + os.urandom(200) for n in range(60)]  # incompressible
    refs = [archive.put(body) for body in bodies]
    assert len(packs(tmp_path)) > 1
    assert all(pack.stat().st_size < 4096 + 600 for pack in packs(tmp_path))
    stored = [body for pack in packs(tmp_path) for _, body in records(pack)]
    assert sorted(stored) == sorted(bodies)
    assert [archive.get(ref) for ref in refs] == bodies
    archive.close()
    assert [RawArchive(tmp_path, open_pack_index).get(ref) for ref in refs] == bodies


def test_bodies_stored_one_file_each_are_read_and_not_stored_again(tmp_path: Path) -> None:
    """An archive written a file a body (`raw/ab/<sha256>.gz`) keeps working."""
    digest = hashlib.sha256(BODY).hexdigest()
    old = tmp_path / "raw" / digest[:2] / f"{digest}.gz"
    old.parent.mkdir(parents=True)
    old.write_bytes(gzip.compress(BODY))
    archive = RawArchive(tmp_path, open_pack_index)
    assert archive.get(f"sha256:{digest}") == BODY
    assert archive.put(BODY) == f"sha256:{digest}"
    assert packs(tmp_path) == []
    assert archive.get(archive.put(b"new")) == b"new"


def test_bodies_stored_under_two_levels_are_read(tmp_path: Path) -> None:
    """An archive written with `raw/ab/cd/<sha256>.gz` keeps working."""
    digest = hashlib.sha256(BODY).hexdigest()
    old = tmp_path / "raw" / digest[:2] / digest[2:4] / f"{digest}.gz"
    old.parent.mkdir(parents=True)
    old.write_bytes(gzip.compress(BODY))
    archive = RawArchive(tmp_path, open_pack_index)
    assert archive.get(f"sha256:{digest}") == BODY
    old.write_bytes(gzip.compress(b"tampered"))
    with pytest.raises(ArchiveError, match="do not match"):
        archive.get(f"sha256:{digest}")
    # stored again: in a pack, and read from there
    assert archive.put(BODY) == f"sha256:{digest}"
    assert archive.get(f"sha256:{digest}") == BODY


def test_put_is_idempotent_across_archives_of_one_data_dir(tmp_path: Path) -> None:
    first, second = RawArchive(tmp_path, open_pack_index), RawArchive(tmp_path, open_pack_index)
    ref = first.put(BODY)
    assert second.put(BODY) == ref and first.put(BODY) == ref
    assert [len(records(pack)) for pack in packs(tmp_path)] == [1]
    assert second.get(ref) == BODY


def _write_bodies(data_dir: str, start: int) -> list[str]:
    archive = RawArchive(data_dir, open_pack_index)
    refs = [archive.put(f"shared {n}".encode()) for n in range(50)]
    refs += [archive.put(f"own {start + n}".encode()) for n in range(50)]
    archive.close()
    return refs


def test_processes_write_one_archive_at_once(tmp_path: Path) -> None:
    with multiprocessing.get_context("spawn").Pool(3) as pool:
        written = pool.starmap(_write_bodies, [(str(tmp_path), n * 1000) for n in range(3)])
    archive = RawArchive(tmp_path, open_pack_index)
    for refs in written:
        assert [archive.get(ref) for ref in refs[:50]] == [f"shared {n}".encode() for n in range(50)]
    own = sorted(archive.get(ref) for refs in written for ref in refs[50:])
    assert own == sorted(f"own {s + n}".encode() for s in (0, 1000, 2000) for n in range(50))
    assert len(packs(tmp_path)) == 3


def test_a_record_written_but_not_indexed_is_found_and_a_torn_one_is_not(
        tmp_path: Path) -> None:
    """A writer that died between appending a record and its index row."""
    archive = RawArchive(tmp_path, open_pack_index)
    archive.put(b"indexed")
    archive.close()
    [pack] = packs(tmp_path)
    member = gzip.compress(BODY)
    intact = struct.pack("<4s32sI", b"CLR1", hashlib.sha256(BODY).digest(), len(member)) + member
    torn = intact[:-5]
    with pack.open("ab") as file:
        file.write(intact + torn)
    reader = RawArchive(tmp_path, open_pack_index)
    assert reader.get(ref_of(BODY)) == BODY
    assert reader.recover() == 0  # indexed once; the torn copy never
    with pytest.raises(ArchiveError, match="not in the archive"):
        reader.get(ref_of(b"never stored"))


def test_a_damaged_record_is_not_indexed(tmp_path: Path) -> None:
    archive = RawArchive(tmp_path, open_pack_index)
    archive.put(b"first")
    archive.close()
    [pack] = packs(tmp_path)
    member = gzip.compress(b"other bytes")  # under BODY's hash: not what it claims
    with pack.open("ab") as file:
        file.write(struct.pack("<4s32sI", b"CLR1", hashlib.sha256(BODY).digest(),
                               len(member)) + member)
    reader = RawArchive(tmp_path, open_pack_index)
    with pytest.raises(ArchiveError, match="not in the archive"):
        reader.get(ref_of(BODY))
    # stored for real afterwards: found (in a pack of the new writer)
    assert reader.get(reader.put(BODY)) == BODY


def test_the_index_is_rebuilt_from_the_packs(tmp_path: Path) -> None:
    archive = RawArchive(tmp_path, open_pack_index, pack_bytes=2048)
    refs = [archive.put(f"body {n} ".encode() * 40) for n in range(30)]
    archive.close()
    for name in ("index.sqlite", "index.sqlite-wal", "index.sqlite-shm"):
        (tmp_path / "raw" / name).unlink(missing_ok=True)
    rebuilt = RawArchive(tmp_path, open_pack_index)
    assert rebuilt.reindex() == 30
    assert [rebuilt.get(ref) for ref in refs] == [f"body {n} ".encode() * 40 for n in range(30)]
    assert rebuilt.put(f"body {0} ".encode() * 40) == refs[0]
    assert sum(len(records(pack)) for pack in packs(tmp_path)) == 30


def test_put_from_several_threads(tmp_path: Path) -> None:
    archive = RawArchive(tmp_path, open_pack_index)
    bodies = [f"page {n % 40}".encode() for n in range(400)]
    with ThreadPoolExecutor(4) as pool:
        refs = list(pool.map(archive.put, bodies))
    assert refs == [ref_of(body) for body in bodies]
    assert sorted(body for pack in packs(tmp_path) for _, body in records(pack)) == sorted(
        set(bodies))


def test_empty_body(tmp_path: Path) -> None:
    archive = RawArchive(tmp_path, open_pack_index)
    assert archive.get(archive.put(b"")) == b""


def test_get_detects_tampering(tmp_path: Path) -> None:
    archive = RawArchive(tmp_path, open_pack_index)
    ref = archive.put(b"x" * 1000)
    [pack] = packs(tmp_path)
    data = bytearray(pack.read_bytes())
    other = zstandard.ZstdCompressor(level=3).compress(b"y" * 1000)  # as the archive does
    assert len(other) == len(data) - 40
    data[40:] = other
    pack.write_bytes(bytes(data))
    with pytest.raises(ArchiveError, match="do not match"):
        archive.get(ref)
    data[50:60] = b"\0" * 10
    pack.write_bytes(bytes(data))
    with pytest.raises(ArchiveError, match="unreadable"):
        archive.get(ref)


def test_get_unknown_or_malformed_ref(tmp_path: Path) -> None:
    archive = RawArchive(tmp_path, open_pack_index)
    with pytest.raises(ArchiveError, match="not in the archive"):
        archive.get(ref_of(b"never stored"))
    for bad in ("md5:abc", "sha256:../../etc/passwd", "sha256:" + "G" * 64):
        with pytest.raises(ArchiveError, match="malformed"):
            archive.get(bad)


def test_crawl_ref_of_one_page_is_the_page_ref(tmp_path: Path) -> None:
    archive = RawArchive(tmp_path, open_pack_index)
    ref = archive.put(BODY)
    assert archive.crawl_ref([ref]) == ref
    assert archive.page_refs(ref) == [ref]


def test_crawl_ref_of_several_pages_is_a_manifest(tmp_path: Path) -> None:
    archive = RawArchive(tmp_path, open_pack_index)
    refs = [archive.put(b"page 1"), archive.put(b"page 2"), archive.put(b"page 1")]
    manifest = archive.crawl_ref(refs)
    assert manifest not in refs
    assert archive.page_refs(manifest) == refs
    assert [archive.get(r) for r in archive.page_refs(manifest)] == [b"page 1", b"page 2", b"page 1"]


def test_json_pages_are_not_mistaken_for_manifests(tmp_path: Path) -> None:
    archive = RawArchive(tmp_path, open_pack_index)
    ref = archive.put(b'{"products": [], "pages": ["x"]}')
    assert archive.page_refs(ref) == [ref]


def test_content_hash_is_sha256_over_bodies_in_order() -> None:
    assert content_hash([BODY]) == ref_of(BODY)
    assert content_hash([b"ab", b"c"]) == "sha256:" + hashlib.sha256(b"abc").hexdigest()
    assert content_hash([b"a", b"b"]) != content_hash([b"b", b"a"])


def test_a_record_claiming_a_huge_body_is_refused_before_it_is_inflated(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A damaged or crafted pack must not make a reader allocate what a header or a
    frame claims: a length past the pack's end ends the walk unread, a frame naming a
    size larger than any body is unreadable, and so is a gzip member inflating past it."""
    archive = RawArchive(tmp_path, open_pack_index)
    small, large = archive.put(b"small"), archive.put(b"z" * 100_000)
    archive.close()
    [pack] = packs(tmp_path)
    with pack.open("ab") as file:  # a header naming 4 GiB - 1 of member, 10 bytes after it
        file.write(struct.pack("<4s32sI", b"CLZ1", hashlib.sha256(BODY).digest(),
                               0xFFFFFFFF) + b"0123456789")
    reader = RawArchive(tmp_path, open_pack_index)
    assert reader.recover() == 0
    with pytest.raises(ArchiveError, match="not in the archive"):
        reader.get(ref_of(BODY))
    monkeypatch.setattr("workers.archive.packs.MAX_BODY", 50_000)
    with pytest.raises(ArchiveError, match="unreadable: a frame of 100000 bytes"):
        reader.get(large)
    digest = hashlib.sha256(b"y" * 100_000).hexdigest()
    loose = tmp_path / "raw" / digest[:2] / f"{digest}.gz"
    loose.parent.mkdir()
    loose.write_bytes(gzip.compress(b"y" * 100_000))
    with pytest.raises(ArchiveError, match="unreadable: a gzip member larger"):
        RawArchive(tmp_path, open_pack_index).get(f"sha256:{digest}")
    assert reader.get(small) == b"small"
    loose.write_bytes(gzip.compress(b"y" * 100_000)[:-20])
    monkeypatch.setattr("workers.archive.packs.MAX_BODY", 256 << 20)
    with pytest.raises(ArchiveError, match="unreadable: an incomplete gzip member"):
        RawArchive(tmp_path, open_pack_index).get(f"sha256:{digest}")


def test_verify_notes_a_record_cut_short_and_reports_a_damaged_one(tmp_path: Path) -> None:
    archive = RawArchive(tmp_path, open_pack_index)
    refs = [archive.put(f"body {n}".encode()) for n in range(3)]
    archive.close()
    [pack] = packs(tmp_path)
    whole = pack.read_bytes()
    member = zstandard.ZstdCompressor().compress(BODY)
    with pack.open("ab") as file:  # power lost mid-write: a header and half its frame
        file.write(struct.pack("<4s32sI", b"CLZ1", hashlib.sha256(BODY).digest(),
                               len(member)) + member[:len(member) // 2])
    found = RawArchive(tmp_path, open_pack_index).verify()
    assert (found.intact, found.records, found.problems) == (True, 3, [])
    assert [note.split(": ", 1)[1] for note in found.notes] == [
        f"ends in a record cut short at byte {len(whole)} "
        f"({40 + len(member) // 2} bytes); the records before it are intact"]
    pack.write_bytes(whole + b"CL")  # a header cut short after two bytes of its mark
    found = RawArchive(tmp_path, open_pack_index).verify()
    assert found.notes and found.intact
    garbage = b"garbage, not a record at all, past the last one"
    pack.write_bytes(whole + garbage)
    found = RawArchive(tmp_path, open_pack_index).verify()
    assert not found.intact and found.notes == []
    assert found.problems == [f"pack {pack.name}: bytes {len(whole)}..{len(whole) + len(garbage)} are "
                              "not an intact record (damaged); the records before them are read"]
    assert [RawArchive(tmp_path, open_pack_index).get(ref) for ref in refs] == [b"body 0", b"body 1", b"body 2"]


_WRITER = """
import sys
from eventstore.pack_index import open_pack_index
from workers.archive.raw_archive import RawArchive
archive = RawArchive(sys.argv[1], open_pack_index)
for n in range(1_000_000):
    print(n, archive.put(b"page %d " % n * 40), flush=True)
"""


def test_every_ref_a_killed_writer_handed_out_is_readable(tmp_path: Path) -> None:
    """kill -9 at any point of a writer's loop (between a record and its index row
    included): every ref it printed reads back, and the archive verifies."""
    writer = subprocess.Popen([sys.executable, "-c", _WRITER, str(tmp_path)],
                              stdout=subprocess.PIPE, cwd=Path(__file__).resolve().parents[2])
    assert writer.stdout is not None
    handed_out = [writer.stdout.readline().split() for _ in range(300)]
    writer.kill()
    writer.wait()
    writer.stdout.close()
    archive = RawArchive(tmp_path, open_pack_index)
    for n, ref in handed_out:
        assert archive.get(ref.decode()) == b"page %d " % int(n) * 40
    found = archive.verify()
    assert found.intact and found.records >= 300, found


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file()}


def test_a_read_only_archive_reads_everything_and_writes_nothing(tmp_path: Path) -> None:
    """An auditor's `raw get`/`raw verify`: the index read into memory, a record its
    writer never indexed found in the pack, and not a byte of the archive changed."""
    writer = RawArchive(tmp_path, open_pack_index)
    refs = [writer.put(f"body {n}".encode()) for n in range(5)]
    writer.close()
    [pack] = packs(tmp_path)
    member = zstandard.ZstdCompressor().compress(BODY)
    with pack.open("ab") as file:  # appended, never indexed
        file.write(struct.pack("<4s32sI", b"CLZ1", hashlib.sha256(BODY).digest(),
                               len(member)) + member)
    before = _tree(tmp_path)
    reader = RawArchive(tmp_path, open_pack_index, read_only=True)
    assert [reader.get(ref) for ref in refs] == [f"body {n}".encode() for n in range(5)]
    assert reader.get(ref_of(BODY)) == BODY
    with pytest.raises(ArchiveError, match="not in the archive"):
        reader.get(ref_of(b"never stored"))
    with pytest.raises(ArchiveError, match="read-only"):
        reader.put(b"new")
    assert reader.verify().intact
    reader.close()
    assert _tree(tmp_path) == before
    empty = tmp_path / "nothing here"
    with pytest.raises(ArchiveError, match="not in the archive"):
        RawArchive(empty, open_pack_index, read_only=True).get(ref_of(BODY))
    assert not empty.exists()


def _commits(archive: RawArchive) -> list[str]:
    """The index's COMMITs from now on (the archive's own connection)."""
    seen: list[str] = []
    index = archive._index()  # noqa: SLF001 - what the index executes
    assert isinstance(index, SQLitePackIndex)
    index.db.set_trace_callback(
        lambda statement: seen.append(statement) if statement == "COMMIT" else None)
    return seen


def test_put_many_stores_a_group_once_each_and_commits_it_once(tmp_path: Path) -> None:
    archive = RawArchive(tmp_path, open_pack_index)
    stored = archive.put(b"stored before")
    bodies = [f"page {n % 15}".encode() for n in range(30)] + [b"stored before"]
    commits = _commits(archive)
    refs = archive.put_many(bodies)
    assert refs == [ref_of(body) for body in bodies] and refs[-1] == stored
    assert commits == ["COMMIT"]
    assert sorted(body for pack in packs(tmp_path) for _, body in records(pack)) == sorted(
        {*bodies})
    other = RawArchive(tmp_path, open_pack_index)  # committed: another archive reads every ref at once
    assert [other.get(ref) for ref in refs] == bodies and other.recover() == 0


def test_put_many_past_a_pack_s_size_indexes_every_pack(tmp_path: Path) -> None:
    archive = RawArchive(tmp_path, open_pack_index, pack_bytes=2048)
    bodies = [f"page {n} ".encode() + os.urandom(300) for n in range(40)]
    refs = archive.put_many(bodies)
    assert len(packs(tmp_path)) > 3
    archive.close()
    reader = RawArchive(tmp_path, open_pack_index)
    assert reader.recover() == 0  # every record of every pack indexed up to its end
    assert [reader.get(ref) for ref in refs] == bodies


def test_a_group_whose_write_fails_raises_and_keeps_what_was_written(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    archive = RawArchive(tmp_path, open_pack_index)
    archive.put(b"first")
    from workers.archive import packs as pack_module

    write, calls = pack_module.Pack.write, []

    def full_disk(pack: pack_module.Pack, record: bytes) -> None:
        calls.append(record)
        if len(calls) == 3:
            raise OSError(28, "No space left on device")
        write(pack, record)

    monkeypatch.setattr(pack_module.Pack, "write", full_disk)
    bodies = [f"body {n}".encode() for n in range(5)]
    with pytest.raises(OSError, match="No space left"):
        archive.put_many(bodies)
    monkeypatch.undo()
    reader = RawArchive(tmp_path, open_pack_index)
    assert reader.recover() == 0  # the two written before the failure are indexed
    assert [reader.get(ref_of(body)) for body in bodies[:2]] == bodies[:2]
    with pytest.raises(ArchiveError, match="not in the archive"):
        reader.get(ref_of(bodies[2]))
    assert archive.put_many(bodies) == [ref_of(body) for body in bodies]  # a new pack
    assert [RawArchive(tmp_path, open_pack_index).get(ref_of(body)) for body in bodies] == bodies
