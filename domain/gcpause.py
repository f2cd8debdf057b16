"""Cyclic garbage collection paused around work that allocates in bulk.

Decoding a batch of events and recording a crawl result each allocate thousands
of objects that all live until the work is done (envelopes, events, stored
events, their dicts). Each young-generation collection in the middle walks them
in vain, and the survivors it promotes trigger full collections, which walk
the whole heap (every imported module's objects): measured on a 500-product
result, collection took an eighth of recording it. Reference counting frees
those objects as before; whatever cycles the block makes are collected at the
first collection after it, and the allocation count falls back as they are freed,
so the pause defers little.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["gc_paused"]


@contextmanager
def gc_paused() -> Iterator[None]:
    """No cyclic garbage collection in the block (if it was on, it is on again after).

    Collection is process-wide: another thread's allocations are not collected
    while a block runs either, and another thread's block may end first and turn
    collection on. Both are harmless: only cycles wait, and only until the next
    collection.
    """
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
