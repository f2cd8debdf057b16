"""Content hashes of the Parquet datasets: a file the writer did not write is never used.

Every Parquet file reaches its place through `publish` (temp file, fsync, rename),
which records the file's sha256 in `checksums.json` at the dataset root. `verify`
compares every Parquet file under the root with what was recorded: a file edited,
replaced or planted since (by hand, by a tool, by an unrestricted DuckDB) is
reported. `DatasetWriter.catch_up` verifies before it writes and rebuilds the
datasets from the event log when anything is wrong; `audit verify` reports it too.

The hashes live beside the data, so they detect edits by anyone who does not also
rewrite `checksums.json`; the event log, not the datasets, is the record of truth.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

__all__ = ["CHECKSUMS", "publish", "publish_written", "recorded_digest", "sha256_file", "verify"]

CHECKSUMS = "checksums.json"


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def publish(root: Path, table: pa.Table, final: Path, **write_options: Any) -> Path:
    """Write `table` to `final` atomically and durably, and record its hash."""
    tmp = final.with_name(final.name + ".tmp")
    pq.write_table(table, tmp, **write_options)
    return publish_written(root, tmp, final)


def publish_written(root: Path, tmp: Path, final: Path) -> Path:
    """Move the file another writer (DuckDB's `COPY`) left at `tmp` to `final` as
    `publish` does: fsync, record its hash, rename."""
    with open(tmp, "rb") as handle:
        os.fsync(handle.fileno())
    digest = sha256_file(tmp)
    os.replace(tmp, final)
    _record(root, final, digest)
    return final


def recorded_digest(root: Path, path: Path) -> str | None:
    """The sha256 recorded when `path` was published, if it was."""
    return _load(root).get(str(path.relative_to(root)))


def _load(root: Path) -> dict[str, str]:
    try:
        data = json.loads((root / CHECKSUMS).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return {str(k): str(v) for k, v in data.items()} if isinstance(data, dict) else {}


def _record(root: Path, path: Path, digest: str) -> None:
    sums = {rel: h for rel, h in _load(root).items() if (root / rel).exists()}
    sums[str(path.relative_to(root))] = digest
    tmp = root / (CHECKSUMS + ".tmp")
    tmp.write_text(json.dumps(sums, sort_keys=True, indent=0), encoding="utf-8")
    os.replace(tmp, root / CHECKSUMS)


def verify(root: Path, known: dict[str, tuple[int, int]] | None = None) -> list[str]:
    """One line per Parquet file that is not exactly what the writer wrote.

    `known` (path -> (size, mtime_ns) of files verified earlier in this process)
    skips re-hashing files whose size and time did not change; it is updated.
    """
    if not root.exists():
        return []
    sums = _load(root)
    problems = []
    for path in sorted(root.rglob("*.parquet")):
        rel = str(path.relative_to(root))
        stat = path.stat()
        seen = (stat.st_size, stat.st_mtime_ns)
        if known is not None and known.get(rel) == seen:
            continue
        if rel not in sums:
            problems.append(f"{rel}: not written by the dataset writer")
        elif sha256_file(path) != sums[rel]:
            problems.append(f"{rel}: changed since it was written (sha256 differs)")
        elif known is not None:
            known[rel] = seen
    return problems
