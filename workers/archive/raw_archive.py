"""The raw archive: response bodies stored content-addressed in the data dir.

A body is named by the sha256 of its raw (uncompressed) bytes and referred to as
`sha256:<hex>`. Under `<data_dir>/raw/`:

    packs/<name>.pack   bodies appended one after another, each a zstd frame behind
                        a 40-byte header; a pack has one writer (a `RawArchive`, from
                        its first new body on) and is only ever appended to
    index.sqlite        sha256 -> (pack, offset, length) of every packed body (the
                        index: a port, `workers.archive.packs.PackIndex`, whose adapter the
                        composition root hands in; `eventstore.pack_index`)
    ab/<sha256>.gz      one file a body: archives written before packs (and
                        `ab/cd/<sha256>.gz`, older still); read, never written

Why packs: a file a page cost more than compressing the page (an inode, a directory
entry, a temporary name and a rename), and on ext4 up to ~1 ms of system time a
page while the kernel searched its block groups for free inodes
(docs/benchmarks.md). Appending to an open file is one `write`.

The record format and the index are `workers.archive.packs`'s.

Order and durability: `put` appends the record and commits its index row before
it returns the ref, so a ref handed out (and recorded in an event) is readable by
every process. A writer that died between the two left a record at its pack's end
that the index does not know; `get` of a ref it does not find walks every pack
past the end its index has covered and indexes each complete record whose bytes
match its hash (a torn record ends the walk and is never indexed).

Deduplication: `put` skips a body whose hash is in the index (or stored as a
one-level file). Two processes storing the same new body at the same moment each
append it; the index keeps the first (the bytes are the same).

A crawl's `raw_ref` is the ref of its page when it fetched one page; when it
fetched several, it is the ref of a small JSON manifest listing every page's
ref in order (`crawl_ref`; `page_refs` resolves either form). Its
`content_hash` is the sha256 over all page bodies, in order (`content_hash`).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import threading
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import zstandard

from workers.archive.packs import (
    GZIP_MARK,
    HEADER,
    MARKS,
    ZSTD,
    IndexRow,
    OpenPackIndex,
    Pack,
    PackIndex,
    cut_short,
    decompress,
    scan,
)

__all__ = ["ArchiveError", "RawArchive", "Verification", "content_hash", "manifest", "ref_of"]

_PREFIX = "sha256:"
_MANIFEST_MARK = "crawl-ledger-manifest"
_HEX64 = re.compile(r"[0-9a-f]{64}")


class ArchiveError(Exception):
    """A ref that is malformed, missing, or whose stored bytes do not match it."""


def ref_of(body: bytes) -> str:
    return _PREFIX + hashlib.sha256(body).hexdigest()


def content_hash(bodies: Sequence[bytes]) -> str:
    """sha256 over the bodies of all pages of a crawl, in order."""
    digest = hashlib.sha256()
    for body in bodies:
        digest.update(body)
    return _PREFIX + digest.hexdigest()


def manifest(page_refs: Sequence[str]) -> bytes:
    """The body of the manifest listing a crawl's page refs in order (its raw_ref is
    this body's ref)."""
    return json.dumps({_MANIFEST_MARK: 1, "pages": list(page_refs)}, sort_keys=True).encode()


@dataclass
class Verification:
    """What `RawArchive.verify` found: intact bodies, and every problem as one line."""

    packs: int = 0
    records: int = 0
    loose_files: int = 0
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def intact(self) -> bool:
        return not self.problems


class RawArchive:
    """Content-addressed body store under `<data_dir>/raw`, safe to share between the
    threads of a process and between processes (each appends to packs of its own)."""

    # zstd's default level; the archive's refs and contents are the same at any level
    def __init__(self, data_dir: Path | str, index: OpenPackIndex, compresslevel: int = 3,
                 pack_bytes: int = 1 << 30, *, read_only: bool = False) -> None:
        """`index` opens the archive's index (once a process). `read_only`: never write
        to the archive (an auditor's tools, a read-only copy): the index is read into
        memory and what `get` recovers stays there."""
        self._root = Path(data_dir) / "raw"
        self._open_index = index
        self._read_only = read_only
        self._packs = self._root / "packs"
        self._level = compresslevel
        self._pack_bytes = pack_bytes
        self._lock = threading.Lock()
        #: a zstd compressor a thread (one is not safe to share between threads)
        self._codecs = threading.local()
        self._pid = -1
        self._db: PackIndex | None = None
        self._pack: Pack | None = None
        #: whether the archive holds one-level files (else `put` does not look for them)
        self._loose = any(len(p.name) == 2 for p in _entries(self._root) if p.is_dir())

    def put(self, body: bytes) -> str:
        """Store `body` (once) and return its ref `sha256:<hex>`."""
        return self.put_many([body])[0]

    def put_many(self, bodies: Sequence[bytes]) -> list[str]:
        """Store each body (once) and return their refs, in order. The new ones are
        appended and their index rows committed in one transaction: committing is
        most of storing a page, and a group commits once. Every ref returned is
        readable; when this raises (a full disk), none is handed out."""
        if self._read_only:
            raise ArchiveError("the archive is open read-only")
        digests = [hashlib.sha256(body).digest() for body in bodies]
        new: dict[bytes, bytes] = {}
        for digest, body in zip(digests, bodies, strict=True):
            if digest not in new and not self._has(digest):
                new[digest] = body
        if new:
            compressor = self._compressor()
            members = [(digest, compressor.compress(body)) for digest, body in new.items()]
            with self._lock:
                db = self._index()
                self._append(db, [(digest, member) for digest, member in members
                                  if db.lookup(digest) is None])
        return [_PREFIX + digest.hex() for digest in digests]

    def get(self, raw_ref: str) -> bytes:
        """The body stored under `raw_ref`, verified against its hash."""
        digest = bytes.fromhex(self._hex(raw_ref))
        stored = self._packed(digest)
        if stored is None:
            stored = self._loose_file(raw_ref)
        if stored is None:
            with contextlib.suppress(OSError):  # e.g. a read-only copy
                self.recover()
            stored = self._packed(digest)
        if stored is None:
            raise ArchiveError(f"{raw_ref}: not in the archive")
        try:
            body = decompress(*stored)
        except (zlib.error, zstandard.ZstdError) as exc:
            raise ArchiveError(f"{raw_ref}: unreadable: {exc}") from exc
        if hashlib.sha256(body).digest() != digest:
            raise ArchiveError(f"{raw_ref}: stored bytes do not match the hash")
        return body

    def crawl_ref(self, page_refs: Sequence[str]) -> str:
        """The crawl's raw_ref: the page's own ref, or a manifest of several."""
        if len(page_refs) == 1:
            return page_refs[0]
        return self.put(manifest(page_refs))

    def page_refs(self, raw_ref: str) -> list[str]:
        """The page refs behind a crawl's raw_ref (a manifest or one page)."""
        body = self.get(raw_ref)
        if not body.startswith(b"{") or _MANIFEST_MARK.encode() not in body[:64]:
            return [raw_ref]
        try:
            manifest = json.loads(body)
        except ValueError:
            return [raw_ref]
        if manifest.get(_MANIFEST_MARK) != 1:
            return [raw_ref]
        return [str(ref) for ref in manifest["pages"]]

    def recover(self) -> int:
        """Index the complete, intact records past each pack's indexed end (a writer
        died between a record and its index row); how many were indexed."""
        found = 0
        with self._lock:
            db = self._index()
            for path in self._pack_files():
                pack_id, start = db.pack(path.name)
                rows: list[IndexRow] = [(digest, pack_id, offset, length)
                                        for offset, digest, length in scan(path, start)]
                end = rows[-1][2] + rows[-1][3] if rows else start
                found += db.add(rows, {pack_id: end})
        return found

    def reindex(self) -> int:
        """Rebuild the index from the packs (after it was lost); bodies indexed."""
        with self._lock:
            self._index().rewind()
        return self.recover()

    def verify(self) -> Verification:
        """Read every stored body back and check it against its hash; check that every
        index row points at such a body. A record whose bytes are all there but do not
        match its hash (or are not a record) is a problem; a pack that ends in a record
        cut short (a writer stopped mid-write: power loss, a full disk; or one still
        writing) is a note: the records before it are intact and nothing is lost that a
        ref was handed out for."""
        found = Verification()
        intact: dict[str, set[tuple[int, int]]] = {}
        for path in self._pack_files():
            found.packs += 1
            spans = intact[path.name] = set()
            end = 0
            for offset, _digest, length in scan(path):
                spans.add((offset, length))
                end = offset + length
            found.records += len(spans)
            size = path.stat().st_size
            if end < size and cut_short(path, end, size):
                found.notes.append(f"pack {path.name}: ends in a record cut short at byte "
                                   f"{end} ({size - end} bytes); the records before it are "
                                   "intact")
            elif end < size:
                found.problems.append(f"pack {path.name}: bytes {end}..{size} are not an "
                                      "intact record (damaged); the records before them "
                                      "are read")
        with self._lock:
            rows = self._index().entries()
        for name, offset, length, digest in rows:
            if (offset, length) not in intact.get(name, ()):
                found.problems.append(f"index: sha256:{digest.hex()} points at pack "
                                      f"{name} offset {offset}, not an intact record there")
        for path in sorted(self._root.glob("[0-9a-f][0-9a-f]/**/*.gz")):
            found.loose_files += 1
            try:
                body = decompress(GZIP_MARK, path.read_bytes())
            except (OSError, zlib.error) as exc:
                found.problems.append(f"file {path}: unreadable ({exc})")
                continue
            if hashlib.sha256(body).hexdigest() != path.name.removesuffix(".gz"):
                found.problems.append(f"file {path}: bytes do not match the name's hash")
        return found

    def close(self) -> None:
        """Close the open pack and the index (a later `put` opens a new pack)."""
        with self._lock:
            if self._pid == os.getpid():
                if self._pack is not None:
                    self._pack.close()
                if self._db is not None:
                    self._db.close()
            self._pack, self._db, self._pid = None, None, -1

    def path_of(self, raw_ref: str) -> Path:
        """Where an archive written before packs keeps `raw_ref`'s body."""
        hexdigest = self._hex(raw_ref)
        return self._root / hexdigest[:2] / f"{hexdigest}.gz"

    # -- internals ---------------------------------------------------------

    @staticmethod
    def _hex(raw_ref: str) -> str:
        hexdigest = raw_ref.removeprefix(_PREFIX)
        if not raw_ref.startswith(_PREFIX) or not _HEX64.fullmatch(hexdigest):
            raise ArchiveError(f"malformed raw ref {raw_ref!r}")
        return hexdigest

    def _index(self) -> PackIndex:
        """This process's handle on the index (opened again in a forked child)."""
        if self._pid != os.getpid():
            self._pack, self._db = None, None  # the parent's: not ours to close
            db = self._open_index(self._root, read_only=self._read_only)
            self._db, self._pid = db, os.getpid()
        assert self._db is not None
        return self._db

    def _pack_files(self) -> list[Path]:
        return sorted(self._packs.glob("*.pack"))

    def _compressor(self) -> zstandard.ZstdCompressor:
        compressor: zstandard.ZstdCompressor | None = getattr(self._codecs, "zstd", None)
        if compressor is None:
            compressor = self._codecs.zstd = zstandard.ZstdCompressor(level=self._level)
        return compressor

    def _has(self, digest: bytes) -> bool:
        with self._lock:
            if self._index().lookup(digest) is not None:
                return True
        if self._loose:
            hexdigest = digest.hex()
            return os.path.exists(os.path.join(self._root, hexdigest[:2], hexdigest + ".gz"))
        return False

    def _append(self, db: PackIndex, records: list[tuple[bytes, bytes]]) -> None:
        """(digest, compressed body) records at the end of this writer's pack, then
        their index rows, in one transaction. A write that fails (a full disk) still
        indexes the records written before it, and raises."""
        rows: list[IndexRow] = []
        ends: dict[int, int] = {}
        try:
            for digest, member in records:
                pack = self._pack
                if pack is None or pack.end >= self._pack_bytes:
                    if pack is not None:
                        pack.close()
                    pack = self._pack = Pack.create(self._packs, db)
                offset = pack.end + HEADER.size
                try:
                    pack.write(HEADER.pack(ZSTD, digest, len(member)) + member)
                except OSError:
                    # a partial record may end the pack: nothing is written after it
                    pack.close()
                    self._pack = None
                    raise
                rows.append((digest, pack.id, offset, len(member)))
                ends[pack.id] = pack.end
        finally:
            if rows:
                db.add(rows, ends)

    def _packed(self, digest: bytes) -> tuple[bytes, bytes] | None:
        """(compression mark, compressed bytes) of `digest`'s indexed record."""
        try:
            with self._lock:
                found = self._index().lookup(digest)
        except OSError:
            return None  # no index here (a read-only copy of an older archive)
        if found is None:
            return None
        name, offset, length = found
        try:
            with open(self._packs / name, "rb") as file:
                file.seek(offset - HEADER.size)
                record = file.read(HEADER.size + length)
        except OSError as exc:
            raise ArchiveError(f"sha256:{digest.hex()}: unreadable pack {name}: {exc}") from exc
        if len(record) < HEADER.size + length:  # the pack was cut after it was indexed
            raise ArchiveError(f"sha256:{digest.hex()}: pack {name} ends before its record "
                               f"(offset {offset})")
        mark, stored_digest, stored_length = HEADER.unpack_from(record)
        if mark not in MARKS or stored_digest != digest or stored_length != length:
            raise ArchiveError(f"sha256:{digest.hex()}: the index points at no record of it "
                               f"in pack {name} (offset {offset})")
        return mark, record[HEADER.size:]

    def _loose_file(self, raw_ref: str) -> tuple[bytes, bytes] | None:
        path = self.path_of(raw_ref)
        for candidate in (path, path.parent / path.name[2:4] / path.name):
            try:
                return GZIP_MARK, candidate.read_bytes()
            except FileNotFoundError:
                continue
            except OSError as exc:
                raise ArchiveError(f"{raw_ref}: unreadable: {exc}") from exc
        return None


def _entries(directory: Path) -> list[Path]:
    try:
        return list(directory.iterdir())
    except FileNotFoundError:
        return []
