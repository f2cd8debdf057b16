"""Where the real-page corpus's bytes are.

The project keeps the corpus's manifests, truth and scoring code (`tests/corpus/`); the
pages and payloads themselves were published by others and stay outside the repository:

1. `$LEDGER_CORPUS_DIR` when set, else `../shared/corpus` beside the project root;
2. `.corpus-cache/` in the project root (ignored by git; `bench/corpus_cache.py` fills it
   from git mirrors of each entry's source), for entries whose bytes are not in 1 yet.

Both are laid out by the manifests' `file` paths relative to `tests/corpus/`:
`pages/<id>.html.gz`, `dispensary/<id>.json[.gz]`.

Tests take the entries whose bytes are present through `present_or_skip`: where no bytes
are found at all they skip with one line; under `CI=true` they fail when fewer than
`CI_PRESENCE` of the entries the shared folder is expected to hold have bytes (in either
root). Entries with a `first_sight` were added after the shared folder was filled: their
bytes are copied there only after their change lands, so until then a clean checkout has
none of them and they are scored where present, counted where not. An entry whose
`first_sight` is `"pending"` counts the same way, but no test or bench scores it (its
bytes are still checked against the holdout list and its `sha256`) until
bench/corpus_first_sight.py has recorded how the extractor saw it first.
"""

from __future__ import annotations

import gzip
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

PROJECT = Path(__file__).resolve().parent.parent
MANIFESTS = PROJECT / "tests" / "corpus"
CACHE = PROJECT / ".corpus-cache"
SHARED = PROJECT.parent / "shared" / "corpus"
#: under CI, the share of the entries expected in the shared folder whose bytes must be present
CI_PRESENCE = 0.95
#: manifest (relative to tests/corpus) -> folder its entries' `file` paths are relative to
MANIFEST_FOLDERS = {"manifest.json": "", "dispensary/manifest.json": "dispensary"}


#: an entry's `first_sight` from when it is added until bench/corpus_first_sight.py records it
PENDING = "pending"


def pending(entry: dict[str, Any]) -> bool:
    """Whether the entry waits for its first sight: nothing may score it before then."""
    return entry.get("first_sight") == PENDING


def has_first_sight(entry: dict[str, Any]) -> bool:
    """Whether the entry records a first sight (not one still pending)."""
    return isinstance(entry.get("first_sight"), dict)


def awaiting_first_sight(entries: list[dict[str, Any]], committed: set[str]) -> list[dict[str, Any]]:
    """The entries bench/corpus_first_sight.py scores: those pending, and those not yet
    committed (id not in `committed`) that record none."""
    return [entry for entry in entries if pending(entry)
            or ("first_sight" not in entry and entry["id"] not in committed)]


def expected_in_shared(entry: dict[str, Any]) -> bool:
    """Whether CI may count on the shared folder holding the entry's bytes (see above)."""
    return "first_sight" not in entry


class CorpusBytesMissing(FileNotFoundError):
    """No root holds the bytes of a manifest entry."""


def roots(environ: Mapping[str, str] = os.environ) -> tuple[Path, ...]:
    """The folders searched for bytes, in order."""
    configured = environ.get("LEDGER_CORPUS_DIR")
    return (Path(configured) if configured else SHARED, CACHE)


def manifest(name: str = "manifest.json") -> list[dict[str, Any]]:
    """The entries of one manifest (`manifest.json` or `dispensary/manifest.json`)."""
    entries: list[dict[str, Any]] = json.loads((MANIFESTS / name).read_text("utf-8"))
    return entries


def relative(entry: dict[str, Any], manifest_name: str = "manifest.json") -> str:
    """The entry's bytes' path below a root, e.g. `dispensary/jane_1.json.gz`."""
    folder = MANIFEST_FOLDERS[manifest_name]
    return f"{folder}/{entry['file']}" if folder else str(entry["file"])


def locate(path: str, environ: Mapping[str, str] = os.environ) -> Path | None:
    """The first root's file at `path`, or None when no root has it."""
    return next((root / path for root in roots(environ) if (root / path).is_file()), None)


def raw(path: str, environ: Mapping[str, str] = os.environ) -> bytes:
    """The stored bytes at `path` (gzipped files stay gzipped)."""
    found = locate(path, environ)
    if found is None:
        raise CorpusBytesMissing(f"no bytes for {path} in {', '.join(map(str, roots(environ)))}")
    return found.read_bytes()


def content(path: str, environ: Mapping[str, str] = os.environ) -> bytes:
    """The bytes at `path`, decompressed when the name ends in `.gz`."""
    data = raw(path, environ)
    return gzip.decompress(data) if path.endswith(".gz") else data


@dataclass(frozen=True)
class Presence:
    present: list[dict[str, Any]]
    missing: list[dict[str, Any]]

    @property
    def share(self) -> float:
        """The share of the entries expected in the shared folder whose bytes are present."""
        expected = [e for e in self.present + self.missing if expected_in_shared(e)]
        if not expected:  # only entries with a first sight: any bytes at all will do
            return 1.0 if self.present else 0.0
        return sum(expected_in_shared(e) for e in self.present) / len(expected)

    @property
    def scorable(self) -> list[dict[str, Any]]:
        """The present entries a test or bench may score: all but those pending a first sight."""
        return [entry for entry in self.present if not pending(entry)]

    def line(self) -> str:
        total = len(self.present) + len(self.missing)
        said = f"corpus bytes: {len(self.present)} of {total} entries present, {len(self.missing)} without bytes"
        added = [e for e in self.missing if not expected_in_shared(e)]
        waiting = sum(map(pending, self.present))
        return (said + (f" ({len(added)} of them added since, with a first sight)" if added else "")
                + (f"; {waiting} present pending their first sight, not scored" if waiting else ""))


def presence(entries: list[dict[str, Any]], manifest_name: str = "manifest.json",
             environ: Mapping[str, str] = os.environ) -> Presence:
    present: list[dict[str, Any]] = []
    missing: list[dict[str, Any]] = []
    for entry in entries:
        found = locate(relative(entry, manifest_name), environ) is not None
        (present if found else missing).append(entry)
    return Presence(present, missing)


def verdict(found: Presence, environ: Mapping[str, str] = os.environ) -> str | None:
    """Why a test may not run on these entries: `skip: …`, `fail: …`, or None to run."""
    if environ.get("CI", "").lower() == "true":
        if found.share < CI_PRESENCE:
            return (f"fail: {found.line()} (CI needs {CI_PRESENCE:.0%} of the entries without a "
                    "first sight; see tests/corpus/README.md)")
        return None
    if not found.present:
        where = ", ".join(map(str, roots(environ)))
        return f"skip: no corpus bytes here ({where}); set LEDGER_CORPUS_DIR to run the corpus tests"
    return None


def present_or_skip(entries: list[dict[str, Any]], manifest_name: str = "manifest.json"
                    ) -> list[dict[str, Any]]:
    """The entries whose bytes are present and whose first sight is not pending, for a test;
    skips or fails as `verdict` says."""
    import pytest

    found = presence(entries, manifest_name)
    why = verdict(found)
    if why is not None and why.startswith("skip: "):
        pytest.skip(why.removeprefix("skip: "))
    if why is not None:
        pytest.fail(why.removeprefix("fail: "))
    return found.scorable
