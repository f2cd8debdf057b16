"""Is the datasets' manifest one the writer wrote, and does it agree with the ledger?

The manifest says which events the Parquet datasets hold; catch-up resumes after
its position. Its truth is the directory's row in the side table `dataset_manifests`
(`TABLE`); `parquet_writer.MANIFEST` beside the files is its export (and the only
manifest of a directory written before the table). A forged position past the real
one would make analytics silently skip every event up to it, one below it would
duplicate rows. `manifest_problems` reports, one line each:

- an export that is not readable JSON with a whole, non-negative `position`;
- an export changed since the writer wrote it (its sha256 in `checksums.json`
  differs; `parquet_writer.write_manifest` records it);
- a position (the table's, or the export's) beyond the ledger's last event (its
  highest notification id);
- a file that holds positions beyond the manifest's although it starts within
  it (a part, or `products_latest.parquet`): the files and the manifest disagree.

An export behind the table (written at the end of a catch-up, so a writer stopped
mid-way leaves it behind) is not a problem: the next catch-up rewrites it.

Parts that start after the position are a crash's leftovers, not a mismatch:
catch-up deletes them. `DatasetWriter.catch_up` rebuilds the datasets from the
log when anything is reported, and `audit verify` reports it.
"""

from __future__ import annotations

import json
from pathlib import Path

from projections.checksums import recorded_digest, sha256_file
from projections.parquet_writer import MANIFEST, latest_through, part_range, parts

__all__ = ["TABLE", "manifest_problems"]

TABLE = "dataset_manifests"


def manifest_problems(root: Path, head: int, stored: int | None = None) -> list[str]:
    """One line per way the manifest of the datasets under `root` — the table's row at
    position `stored` (None: no row) and its export — disagrees with itself, its files
    or a ledger whose last event is at `head`."""
    problems: list[str] = []
    exported: int | None = None
    path = root / MANIFEST
    if path.exists():
        read = _position(path)
        if isinstance(read, str):
            problems.append(f"{MANIFEST}: {read}")
        else:
            exported = read
            problems += _digest_problems(root, path)
            if read > head:
                problems.append(f"{MANIFEST}: position {read} is beyond the ledger's "
                                f"last event ({head})")
    if stored is not None and stored > head:
        problems.append(f"{TABLE}: position {stored} is beyond the ledger's last event ({head})")
    position = stored if stored is not None else exported
    return problems if position is None else problems + _files_beyond(root, position)


def _position(path: Path) -> int | str:
    """The manifest's position, or what is wrong with it."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        return f"unreadable ({type(error).__name__})"
    position = data.get("position") if isinstance(data, dict) else None
    if type(position) is not int or position < 0:
        return "no whole, non-negative position"
    return position


def _digest_problems(root: Path, path: Path) -> list[str]:
    expected = recorded_digest(root, path)
    if expected is not None and sha256_file(path) != expected:
        return [f"{MANIFEST}: changed since it was written (sha256 differs)"]
    return []


def _files_beyond(root: Path, position: int) -> list[str]:
    problems = []
    for path in parts(root):
        try:
            first, last = part_range(path)
        except ValueError:
            continue  # a temp file: catch-up deletes it
        if first <= position < last:
            problems.append(f"{path.relative_to(root)}: holds positions up to {last},"
                            f" beyond the manifest's {position}")
    through = _latest_through(root)
    if through is not None and through > position:
        problems.append(f"products_latest.parquet: covers positions up to {through},"
                        f" beyond the manifest's {position}")
    return problems


def _latest_through(root: Path) -> int | None:
    try:
        return latest_through(root)
    except (OSError, KeyError, ValueError):
        return None  # unreadable: `checksums.verify` reports the file itself
