"""The raw archive: response bodies stored content-addressed in the data dir.

A body is stored gzip-compressed at `<data_dir>/raw/ab/cd/<sha256>.gz`, named
by the sha256 of the *raw* (uncompressed) body, and referred to as
`sha256:<hex>`. Writes are atomic (temporary file + rename) and idempotent.

A crawl's `raw_ref` is the ref of its page when it fetched one page; when it
fetched several, it is the ref of a small JSON manifest listing every page's
ref in order (`crawl_ref`; `page_refs` resolves either form). Its
`content_hash` is the sha256 over all page bodies, in order (`content_hash`).
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import re
import tempfile
from collections.abc import Sequence
from pathlib import Path

__all__ = ["ArchiveError", "RawArchive", "content_hash", "ref_of"]

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


class RawArchive:
    """Content-addressed body store under `<data_dir>/raw`."""

    # Level 1: a 16 KB page in ~0.1 ms instead of ~0.5 ms at 5, for ~10 % more
    # bytes; the archive's refs and contents are the same at any level.
    def __init__(self, data_dir: Path | str, compresslevel: int = 1) -> None:
        self._root = Path(data_dir) / "raw"
        self._level = compresslevel

    def put(self, body: bytes) -> str:
        """Store `body` (once) and return its ref `sha256:<hex>`."""
        ref = ref_of(body)
        path = self.path_of(ref)
        if not path.exists():
            self._write_atomically(path, gzip.compress(body, self._level, mtime=0))
        return ref

    def get(self, raw_ref: str) -> bytes:
        """The body stored under `raw_ref`, verified against its hash."""
        path = self.path_of(raw_ref)
        try:
            body = gzip.decompress(path.read_bytes())
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
        return self._root / hexdigest[:2] / hexdigest[2:4] / f"{hexdigest}.gz"

    @staticmethod
    def _write_atomically(path: Path, data: bytes) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as tmp_file:
                tmp_file.write(data)
            os.replace(tmp, path)  # atomic; a concurrent writer wrote the same bytes
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
