"""A data directory in use: `serve` holds a shared lock on it for as long as it runs,
and `demo`, which deletes its directory and starts a new one, refuses a directory
someone holds (a server would go on serving a deleted database).

The lock is an `flock` on `<data dir>/.in-use`: the kernel lets it go when the
holding process ends, however it ends.
"""

from __future__ import annotations

import fcntl
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

__all__ = ["DataDirInUse", "refuse_if_used", "using"]

LOCK_FILE = ".in-use"


class DataDirInUse(FileExistsError):
    """Another process holds the data directory."""


@contextmanager
def using(data_dir: Path) -> Iterator[None]:
    """Hold the directory (shared: several readers may hold it at once)."""
    data_dir.mkdir(parents=True, exist_ok=True)
    with open(data_dir / LOCK_FILE, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_SH)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def refuse_if_used(data_dir: Path) -> None:
    """Raise `DataDirInUse` if a process holds `data_dir` (checked, not kept: the caller
    is about to delete the directory)."""
    lock = data_dir / LOCK_FILE
    if not lock.exists():
        return
    with open(lock, "a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise DataDirInUse(f"{data_dir} is in use by another crawl-ledger process "
                               "(`serve`?)") from None
        fcntl.flock(handle, fcntl.LOCK_UN)
