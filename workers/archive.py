"""The raw archive: response bodies stored content-addressed in the data dir.

A body is stored gzip-compressed at `<data_dir>/raw/ab/<sha256>.gz`, named
by the sha256 of the *raw* (uncompressed) body, and referred to as
`sha256:<hex>`. Writes are atomic (temporary file + rename) and idempotent.

One level of 256 directories, as git's loose objects: a second level (`ab/cd/`, 65,536
directories) made a new directory, an inode and a 4 KiB block, for nearly every page
of an archive's first ~100,000 pages, and a `mkdir` cost as much CPU as the file's own
creation. Bodies stored under `ab/cd/` (archives written with two levels) are still
read; a body stored there again is written under `ab/`.

A crawl's `raw_ref` is the ref of its page when it fetched one page; when it
fetched several, it is the ref of a small JSON manifest listing every page's
ref in order (`crawl_ref`; `page_refs` resolves either form). Its
`content_hash` is the sha256 over all page bodies, in order (`content_hash`).
"""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import json
import os
import re
from collections.abc import Sequence
from pathlib import Path

__all__ = ["ArchiveError", "RawArchive", "content_hash", "ref_of"]

_PREFIX = "sha256:"
_MANIFEST_MARK = "crawl-ledger-manifest"
_HEX64 = re.compile(r"[0-9a-f]{64}")
_TEMPORARY_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)


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


class RawArchive:
    """Content-addressed body store under `<data_dir>/raw`."""

    # Level 1: a 16 KB page in ~0.1 ms instead of ~0.5 ms at 5, for ~10 % more
    # bytes; the archive's refs and contents are the same at any level.
    def __init__(self, data_dir: Path | str, compresslevel: int = 1) -> None:
        self._root = Path(data_dir) / "raw"
        self._root_name = str(self._root)
        self._level = compresslevel
        #: `ab` directories known to exist: no mkdir (a syscall) for them again
        self._dirs: set[str] = set()

    def put(self, body: bytes) -> str:
        """Store `body` (once) and return its ref `sha256:<hex>`."""
        hexdigest = hashlib.sha256(body).hexdigest()
        # plain strings and os calls: pathlib's objects cost more than the stat
        directory = os.path.join(self._root_name, hexdigest[:2])
        name = f"{hexdigest}.gz"
        if not os.path.exists(os.path.join(directory, name)):
            self._write_atomically(directory, name, gzip.compress(body, self._level, mtime=0))
        return _PREFIX + hexdigest

    def get(self, raw_ref: str) -> bytes:
        """The body stored under `raw_ref`, verified against its hash."""
        path = self.path_of(raw_ref)
        try:
            try:
                stored = path.read_bytes()
            except FileNotFoundError:
                stored = self._two_level_path(path).read_bytes()
            body = gzip.decompress(stored)
        except FileNotFoundError:
            raise ArchiveError(f"{raw_ref}: not in the archive") from None
        except (OSError, EOFError) as exc:
            raise ArchiveError(f"{raw_ref}: unreadable: {exc}") from exc
        if ref_of(body) != raw_ref:
            raise ArchiveError(f"{raw_ref}: stored bytes do not match the hash")
        return body

    def crawl_ref(self, page_refs: Sequence[str]) -> str:
        """The crawl's raw_ref: the page's own ref, or a manifest of several."""
        if len(page_refs) == 1:
            return page_refs[0]
        manifest = {_MANIFEST_MARK: 1, "pages": list(page_refs)}
        return self.put(json.dumps(manifest, sort_keys=True).encode())

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

    def path_of(self, raw_ref: str) -> Path:
        hexdigest = raw_ref.removeprefix(_PREFIX)
        if not raw_ref.startswith(_PREFIX) or not _HEX64.fullmatch(hexdigest):
            raise ArchiveError(f"malformed raw ref {raw_ref!r}")
        return self._root / hexdigest[:2] / f"{hexdigest}.gz"

    @staticmethod
    def _two_level_path(path: Path) -> Path:
        """Where an archive written with two directory levels keeps `path`'s body."""
        return path.parent / path.name[2:4] / path.name

    def _write_atomically(self, directory: str, name: str, data: bytes) -> None:
        if directory not in self._dirs:
            os.makedirs(directory, exist_ok=True)
            self._dirs.add(directory)
        try:
            fd, tmp = _create_temporary(directory, name)
        except FileNotFoundError:  # the directory went away since: make it again
            os.makedirs(directory, exist_ok=True)
            fd, tmp = _create_temporary(directory, name)
        try:
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view):]
            finally:
                os.close(fd)
            # atomic; a concurrent writer wrote the same bytes
            os.replace(tmp, os.path.join(directory, name))
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise


def _create_temporary(directory: str, name: str) -> tuple[int, str]:
    """A new temporary file beside `name`, as `tempfile.mkstemp` makes one (O_EXCL,
    0600, a random part), without its Python overhead: (fd, path)."""
    for _ in range(100):
        tmp = os.path.join(directory, f".{name}.{os.urandom(6).hex()}.tmp")
        try:
            return os.open(tmp, _TEMPORARY_FLAGS, 0o600), tmp
        except FileExistsError:
            continue
    raise FileExistsError(f"no free temporary name in {directory}")
