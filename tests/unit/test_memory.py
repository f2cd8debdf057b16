"""`ledger.host.memory`: glibc's malloc gives freed page-sized blocks back to the system."""

from __future__ import annotations

import subprocess
import sys

from ledger.host.memory import keep_freed_memory_small

#: a crawl in small: a large page freed (glibc raises its thresholds to its size), then
#: 32 MiB of page-sized blocks, each followed by a smaller block that stays, are freed
PROBE = """
import sys
def rss():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS"):
            return int(line.split()[1]) // 1024
if sys.argv[1] == "fixed":
    from ledger.host.memory import keep_freed_memory_small
    assert keep_freed_memory_small({})
page = b"x" * (4 << 20)
del page
before = rss()
blocks, kept = [], []
for _ in range(64):
    blocks.append(b"p" * (512 << 10))
    kept.append(b"k" * (200 << 10))
del blocks
print(rss() - before)
"""


def held_after_free(mode: str) -> int:
    """MiB still resident after the page-sized blocks were freed (12.5 MiB stay in use)."""
    out = subprocess.run([sys.executable, "-c", PROBE, mode], capture_output=True, text=True,
                         check=True, timeout=60)
    return int(out.stdout.split()[-1])


def test_freed_page_sized_blocks_go_back_to_the_system() -> None:
    moving, fixed = held_after_free("moving"), held_after_free("fixed")
    assert moving >= 40, f"glibc kept {moving} MiB with its moving thresholds: the probe is off"
    assert fixed <= 20, f"{fixed} MiB still held with the thresholds fixed"


def test_an_operators_malloc_variables_are_kept() -> None:
    assert keep_freed_memory_small({"MALLOC_MMAP_THRESHOLD_": "65536"}) is False
    assert keep_freed_memory_small({"MALLOC_TRIM_THRESHOLD_": "0"}) is False
