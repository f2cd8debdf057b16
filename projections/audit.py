"""Tamper evidence for the event log: a hash chain with recorded checkpoints.

    h(0) = sha256("crawl-ledger audit v1")
    h(n) = sha256(h(n-1) || canonical JSON of the n-th envelope in log order)

`checkpoint` extends the chain from the last checkpoint to the head and
records (position, events, hash). `verify` recomputes the chain from position
0 and compares it with every recorded checkpoint (and, optionally, a head
hash an auditor kept elsewhere): an edited, deleted or inserted event changes
every hash after it. Checkpoints live beside the read models; someone who can
rewrite the database can rewrite them too, so publish or keep the printed head
hash outside the system and pass it back with `--expect`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from domain.envelope import Envelope
from projections.db import Database
from projections.source import EventSource

TABLE = "audit_checkpoints"
EVERY = 1000  # a checkpoint every so many events, so a verify can say where the log changed
GENESIS = hashlib.sha256(b"crawl-ledger audit v1").hexdigest()
Progress = Callable[[int, int], None]


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
    #: every stream (aggregate) id met in the log, for the checks of derived data
    streams: frozenset[str] = frozenset()


def link(previous: str, env: Envelope) -> str:
    fields = env.to_dict()
    fields.pop("ledger_id", None)  # the transport's stamp, not part of the log
    canonical = json.dumps(fields, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(bytes.fromhex(previous) + canonical.encode()).hexdigest()


def _envelopes(source: EventSource, after: int, batch: int = 5000) -> Iterator[Envelope]:
    while True:
        envelopes = source.read(after, batch)
        yield from envelopes
        if len(envelopes) < batch:
            return
        after = envelopes[-1].position


def create_table(db: Database) -> None:
    with db.transaction() as tx:
        tx.execute(f"CREATE TABLE IF NOT EXISTS {TABLE} (position {db.column_type('int')} "
                   f"PRIMARY KEY, events {db.column_type('int')} NOT NULL, "
                   f"chain_hash {db.column_type('text')} NOT NULL)")


def checkpoints(db: Database) -> list[Checkpoint]:
    create_table(db)
    rows = db.query(f"SELECT position, events, chain_hash FROM {TABLE} ORDER BY position")
    return [Checkpoint(int(r["position"]), int(r["events"]), r["chain_hash"]) for r in rows]


def checkpoint(source: EventSource, db: Database) -> Checkpoint:
    """Extend the chain from the last checkpoint to the head and record it."""
    recorded = checkpoints(db)
    last = recorded[-1] if recorded else Checkpoint(0, 0, GENESIS)
    head, new = last, []
    for env in _envelopes(source, last.position):
        head = Checkpoint(env.position, head.events + 1, link(head.chain_hash, env))
        if head.events % EVERY == 0:
            new.append(head)
    if head != last and (not new or new[-1] != head):
        new.append(head)
    with db.transaction() as tx:
        for point in new:
            tx.execute(f"INSERT INTO {TABLE} (position, events, chain_hash) VALUES (?, ?, ?)",
                       (point.position, point.events, point.chain_hash))
    return head


def verify(source: EventSource, db: Database, expect: str | None = None,
           progress: Progress | None = None) -> Verdict:
    """Recompute the chain from position 0; compare with every checkpoint (and `expect`)."""
    recorded = checkpoints(db)
    wanted = {c.position: c for c in recorded}
    good = 0  # the last position whose checkpoint matched
    head, total = Checkpoint(0, 0, GENESIS), source.head()
    streams: set[str] = set()
    try:
        for env in _envelopes(source, 0):
            streams.add(str(env.stream_id))
            head = Checkpoint(env.position, head.events + 1, link(head.chain_hash, env))
            known = wanted.pop(head.position, None)
            if known is not None and known != head:
                return Verdict(False, head, head.events, known, f"the log changed between "
                               f"positions {good} and {known.position} (checkpoint mismatch)")
            good = head.position if known is not None else good
            if progress is not None and head.events % 5000 == 0:
                progress(head.position, total)
    except ValueError as error:  # a stored event that no longer parses
        return Verdict(False, head, head.events, None,
                       f"the event after position {head.position} cannot be read: {error}")
    if wanted:
        missing = min(wanted.values(), key=lambda c: c.position)
        return Verdict(False, head, head.events, missing,
                       f"checkpointed position {missing.position} is no longer in the log")
    # every recorded checkpoint now equals the recomputed chain at its position
    if expect is not None and expect not in {head.chain_hash, *(c.chain_hash for c in recorded)}:
        return Verdict(False, head, head.events, None,
                       f"the recomputed chain does not pass through the expected hash {expect[:16]}…")
    return Verdict(True, head, head.events, streams=frozenset(streams))
