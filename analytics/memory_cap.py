"""A hard ceiling on the memory one sandboxed query may add to this process.

DuckDB's `memory_limit` governs its buffer manager (hash tables, sorts, caches),
not the vectors a pipeline builds: `SELECT repeat('x', 1000000) FROM range(3000)`
fills a 2048-row chunk with 2 GB of strings before anything is handed over,
whatever the limit says. So `capped_memory` lowers the process's soft
`RLIMIT_DATA` to what the process uses now plus an allowance, for the duration
of the query, and restores it afterwards. An allocation past the ceiling fails:
DuckDB raises its `Out of Memory Error` (Python raises `MemoryError`), the
query stops, and the process carries on.

The limit is per process: every thread allocating meanwhile shares the
ceiling. The CLI runs one query at a time, so that is the query's budget; a
long-running server should run sandboxed SQL in a worker process of its own.
Where `RLIMIT_DATA` or `/proc/self/status` is unavailable (not Linux), no
ceiling is set and only DuckDB's own limit applies.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

try:
    import resource
except ImportError:  # pragma: no cover - not on POSIX
    resource = None  # type: ignore[assignment]

__all__ = ["capped_memory", "data_in_use"]

_STATUS = Path("/proc/self/status")


def data_in_use() -> int | None:
    """The process's data segment (`VmData`, what `RLIMIT_DATA` counts) in bytes."""
    try:
        lines = _STATUS.read_text(encoding="ascii").splitlines()
    except OSError:
        return None
    for line in lines:
        if line.startswith("VmData:"):
            return int(line.split()[1]) * 1024
    return None


@contextmanager
def capped_memory(allowance: int) -> Iterator[bool]:
    """Allow at most `allowance` more bytes of data segment inside the block.

    Yields whether a ceiling is in place."""
    in_use = data_in_use()
    if resource is None or in_use is None:
        yield False
        return
    soft, hard = resource.getrlimit(resource.RLIMIT_DATA)
    ceiling = in_use + allowance
    if hard != resource.RLIM_INFINITY:
        ceiling = min(ceiling, hard)
    if soft != resource.RLIM_INFINITY:
        ceiling = min(ceiling, soft)
    resource.setrlimit(resource.RLIMIT_DATA, (ceiling, hard))
    try:
        yield True
    finally:
        resource.setrlimit(resource.RLIMIT_DATA, (soft, hard))
