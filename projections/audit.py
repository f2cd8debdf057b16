"""Tamper evidence for the event log: the stored hash chain, verified, and checkpoints.

Every stored event carries its chain link, written with it (`eventstore.chain`: the
hash of the previous link and the event's full stored record). `verify` recomputes
the chain from the first event and compares each event's link as stored, every
recorded checkpoint and, optionally, a head hash kept elsewhere (`--expect`): an
edited column, an inserted, deleted or reordered event is caught at its position,
checkpoint or not. `checkpoint` extends the chain from the last checkpoint to the
head and records (position, events, hash).

Links and checkpoints live in the databases they protect: someone who can rewrite
the database and recompute every hash after an edit is caught only by a head hash
kept outside the system, so publish the printed head and pass it back with `--expect`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from eventstore.base import Backend, LinkedRow
from eventstore.chain import GENESIS, next_link
from projections.db import Database
from projections.framework import Table

__all__ = ["Checkpoint", "ChainBroken", "StoredChain", "Verdict", "checkpoint", "verify"]

#: the checkpoints of the record chain (`audit_checkpoints` held the envelope chain's)
TABLE = "audit_chain_checkpoints"
EVERY = 1000  # a checkpoint every so many events
BATCH = 5000
Progress = Callable[[int, int], None]


class ChainBroken(Exception):
    """The stored chain does not verify where a checkpoint would extend it."""


@dataclass(frozen=True)
class Checkpoint:
    position: int
    events: int
    chain_hash: str


@dataclass(frozen=True)
class Verdict:
    ok: bool
    head: Checkpoint
    checked: int
    first_bad: Checkpoint | None = None
    message: str = ""


class StoredChain:
    """The event store's records with their stored links, read by its backend's adapter."""

    def __init__(self, backend: Backend, recorder: Any) -> None:
        self.backend = backend
        self.recorder = recorder

    def rows(self, after: int) -> Iterator[LinkedRow]:
        while True:
            rows = self.backend.chain_rows(self.recorder, after, BATCH)
            yield from rows
            if len(rows) < BATCH:
                return
            after = rows[-1][0]

    def head(self) -> int:
        return int(self.recorder.max_notification_id() or 0)

    def link_at(self, position: int) -> bytes | None:
        """The stored link of the event at `position` (None: no such event, or no link)."""
        rows = self.backend.chain_rows(self.recorder, position - 1, 1)
        if not rows or rows[0][0] != position or rows[0][5] is None:
            return None
        return bytes(rows[0][5])


CHECKPOINTS = Table(TABLE, ("position",),
                    {"position": "int", "events": "int", "chain_hash": "text"})


def create_table(db: Database) -> None:
    with db.transaction() as tx:
        for statement in CHECKPOINTS.ddl(db, ""):
            tx.execute(statement)


def checkpoints(db: Database) -> list[Checkpoint]:
    create_table(db)
    rows = db.query(f"SELECT position, events, chain_hash FROM {TABLE} ORDER BY position")
    return [Checkpoint(int(r["position"]), int(r["events"]), r["chain_hash"]) for r in rows]


def _broken(row: LinkedRow, link: bytes) -> str | None:
    """Why the stored link of `row` is not `link` (recomputed), or None if it is."""
    position, stored = row[0], row[5]
    if stored is None:
        return (f"the event at position {position} has no chain link (written around the "
                "recorder, or its link deleted)")
    if bytes(stored) != link:
        return (f"the event at position {position} does not match its chain link: it was "
                "edited, or events just before it were deleted")
    return None


def checkpoint(chain: StoredChain, db: Database) -> Checkpoint:
    """Extend the chain from the last checkpoint to the head and record it; `ChainBroken`
    if a stored link on the way does not verify (nothing is recorded then)."""
    recorded = checkpoints(db)
    last = recorded[-1] if recorded else Checkpoint(0, 0, GENESIS.hex())
    head, new, previous = last, [], bytes.fromhex(last.chain_hash)
    for row in chain.rows(last.position):
        previous = next_link(previous, *row[:5])
        if (why := _broken(row, previous)) is not None:
            raise ChainBroken(f"{why}; nothing recorded (`audit verify` reports the log)")
        head = Checkpoint(row[0], head.events + 1, previous.hex())
        if head.events % EVERY == 0:
            new.append(head)
    if head != last and (not new or new[-1] != head):
        new.append(head)
    with db.transaction() as tx:
        for point in new:
            tx.execute(f"INSERT INTO {TABLE} (position, events, chain_hash) VALUES (?, ?, ?)",
                       (point.position, point.events, point.chain_hash))
    return head


def verify(chain: StoredChain, db: Database, expect: str | None = None,
           progress: Progress | None = None) -> Verdict:
    """Recompute the chain from the first event; compare it with each stored link, every
    checkpoint (and `expect`). Reads only."""
    wanted = {c.position: c for c in checkpoints(db)}
    head, previous, total = Checkpoint(0, 0, GENESIS.hex()), GENESIS, chain.head()
    passed = expect is None or expect == head.chain_hash
    for row in chain.rows(0):
        previous = next_link(previous, *row[:5])
        head = Checkpoint(row[0], head.events + 1, previous.hex())
        if (why := _broken(row, previous)) is not None:
            return Verdict(False, head, head.events, head, why)
        known = wanted.pop(head.position, None)
        if known is not None and known != head:
            return Verdict(False, head, head.events, known,
                           f"the log up to position {known.position} is not the one checkpointed "
                           "(checkpoint mismatch: the log and its links were rewritten)")
        passed = passed or head.chain_hash == expect
        if progress is not None and head.events % BATCH == 0:
            progress(head.position, total)
    if wanted:
        missing = min(wanted.values(), key=lambda c: c.position)
        return Verdict(False, head, head.events, missing,
                       f"checkpointed position {missing.position} is no longer in the log")
    if not passed:
        return Verdict(False, head, head.events, None, "the recomputed chain does not pass "
                       f"through the expected hash {str(expect)[:16]}…")
    return Verdict(True, head, head.events)
