"""Freed memory goes back to the system: glibc malloc's thresholds fixed at 128 KiB.

glibc serves a request of 128 KiB or more with its own `mmap`, and unmaps it when it is
freed, but on each such free it raises that threshold to the freed size (up to 32 MiB),
and the trim threshold to twice it. A crawling process frees large blocks all the time
(a real page's bytes, its text, its lxml tree: a 3 MB page is tens of MB of tree); after
the first few, glibc keeps every later one on its heaps, and a process that read a few
large pages holds their memory until it exits. Measured on the memory bench's crawler,
3,000 pages with 100 in flight, one in ten a real shop page: peak RSS 128.9 MiB with the
thresholds moving, ~116-119 MiB with them fixed, and 100-105 MiB instead of ~128 MiB once
the crawl ends.

`keep_freed_memory_small()` fixes both at glibc's starting values (`mallopt`, as the
`MALLOC_MMAP_THRESHOLD_` and `MALLOC_TRIM_THRESHOLD_` environment variables would). An
operator who set either variable keeps their setting; elsewhere than glibc it does
nothing.
"""

from __future__ import annotations

import ctypes
import os
from collections.abc import Mapping

__all__ = ["THRESHOLD", "keep_freed_memory_small"]

#: glibc's default M_MMAP_THRESHOLD and M_TRIM_THRESHOLD, before it moves them
THRESHOLD = 128 * 1024
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
_VARIABLES = ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_")


def keep_freed_memory_small(env: Mapping[str, str] = os.environ) -> bool:
    """Fix malloc's mmap and trim thresholds; True when this process's malloc took them."""
    if any(name in env for name in _VARIABLES):
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):  # not glibc (musl, macOS): nothing to set
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    return bool(mallopt(_M_MMAP_THRESHOLD, THRESHOLD)) and bool(
        mallopt(_M_TRIM_THRESHOLD, THRESHOLD))
