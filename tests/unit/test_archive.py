"""The content-addressed raw archive."""

from __future__ import annotations

import gzip
import hashlib
from pathlib import Path

import pytest

from workers.archive import ArchiveError, RawArchive, content_hash, ref_of

BODY = b"<html><body>Blue Dream 3.5g $45</body></html>"


def test_put_returns_sha256_ref_and_stores_gzip_at_content_path(tmp_path: Path) -> None:
    archive = RawArchive(tmp_path)
    ref = archive.put(BODY)
    digest = hashlib.sha256(BODY).hexdigest()
    assert ref == f"sha256:{digest}"
    path = tmp_path / "raw" / digest[:2] / f"{digest}.gz"
    assert gzip.decompress(path.read_bytes()) == BODY
    assert archive.get(ref) == BODY
    assert [p.name for p in (tmp_path / "raw").iterdir()] == [digest[:2]]


def test_one_directory_level_for_many_bodies(tmp_path: Path) -> None:
    archive = RawArchive(tmp_path)
    refs = [archive.put(f"page {n}".encode()) for n in range(600)]
    directories = [p for p in (tmp_path / "raw").iterdir()]
    assert len(directories) <= 256
    assert all(f.is_file() for d in directories for f in d.iterdir())
    assert [archive.get(ref) for ref in refs] == [f"page {n}".encode() for n in range(600)]


def test_bodies_stored_under_two_levels_are_read(tmp_path: Path) -> None:
    """An archive written with `raw/ab/cd/<sha256>.gz` keeps working."""
    digest = hashlib.sha256(BODY).hexdigest()
    old = tmp_path / "raw" / digest[:2] / digest[2:4] / f"{digest}.gz"
    old.parent.mkdir(parents=True)
    old.write_bytes(gzip.compress(BODY))
    archive = RawArchive(tmp_path)
    assert archive.get(f"sha256:{digest}") == BODY
    old.write_bytes(gzip.compress(b"tampered"))
    with pytest.raises(ArchiveError, match="do not match"):
        archive.get(f"sha256:{digest}")
    # stored again: under one level, and read from there
    assert archive.put(BODY) == f"sha256:{digest}"
    assert archive.get(f"sha256:{digest}") == BODY


def test_put_is_idempotent_and_leaves_no_temporary_files(tmp_path: Path) -> None:
    archive = RawArchive(tmp_path)
    ref = archive.put(BODY)
    path = archive.path_of(ref)
    before = path.stat()
    assert archive.put(BODY) == ref
    assert path.stat().st_ino == before.st_ino and path.stat().st_mtime_ns == before.st_mtime_ns
    assert [p.name for p in path.parent.iterdir()] == [path.name]


def test_empty_body(tmp_path: Path) -> None:
    archive = RawArchive(tmp_path)
    assert archive.get(archive.put(b"")) == b""


def test_get_detects_tampering(tmp_path: Path) -> None:
    archive = RawArchive(tmp_path)
    ref = archive.put(BODY)
    archive.path_of(ref).write_bytes(gzip.compress(b"something else"))
    with pytest.raises(ArchiveError, match="do not match"):
        archive.get(ref)


def test_get_unknown_or_malformed_ref(tmp_path: Path) -> None:
    archive = RawArchive(tmp_path)
    with pytest.raises(ArchiveError, match="not in the archive"):
        archive.get(ref_of(b"never stored"))
    for bad in ("md5:abc", "sha256:../../etc/passwd", "sha256:" + "G" * 64):
        with pytest.raises(ArchiveError, match="malformed"):
            archive.get(bad)


def test_crawl_ref_of_one_page_is_the_page_ref(tmp_path: Path) -> None:
    archive = RawArchive(tmp_path)
    ref = archive.put(BODY)
    assert archive.crawl_ref([ref]) == ref
    assert archive.page_refs(ref) == [ref]


def test_crawl_ref_of_several_pages_is_a_manifest(tmp_path: Path) -> None:
    archive = RawArchive(tmp_path)
    refs = [archive.put(b"page 1"), archive.put(b"page 2"), archive.put(b"page 1")]
    manifest = archive.crawl_ref(refs)
    assert manifest not in refs
    assert archive.page_refs(manifest) == refs
    assert [archive.get(r) for r in archive.page_refs(manifest)] == [b"page 1", b"page 2", b"page 1"]


def test_json_pages_are_not_mistaken_for_manifests(tmp_path: Path) -> None:
    archive = RawArchive(tmp_path)
    ref = archive.put(b'{"products": [], "pages": ["x"]}')
    assert archive.page_refs(ref) == [ref]


def test_content_hash_is_sha256_over_bodies_in_order() -> None:
    assert content_hash([BODY]) == ref_of(BODY)
    assert content_hash([b"ab", b"c"]) == "sha256:" + hashlib.sha256(b"abc").hexdigest()
    assert content_hash([b"a", b"b"]) != content_hash([b"b", b"a"])
