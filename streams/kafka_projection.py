"""Applying envelopes consumed from Kafka to the read models, exactly once in effect.

A consumer sees only its partitions, so global positions are not contiguous
for it: the position-based skip of `Projection.apply_batch` does not apply.
Instead, in one transaction per batch:

- the batch's topic-partition rows in `kafka_offsets` are locked (PostgreSQL
  `FOR UPDATE`, in a fixed order), so two consumers that briefly own the same
  partition during a rebalance apply its batches one after the other;
- messages below the stored offset are dropped (redelivery after a restart
  or a seek); per partition only the run of messages that continues exactly
  at the stored offset is applied, so a message the consumer lost (Faust can
  drop fetched messages during a rebalance) is never stepped over: the
  partition stalls at the gap until the projector seeks back to the stored
  offset (`StallWatchdog`) and the lost message arrives again;
- the applied messages go through each projection's one apply loop
  (`Projection.apply`: the rows read in one query per table), whose handlers
  skip any stream version a row has already seen;
- the new offsets are written with the rows.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

from domain.envelope import Envelope
from projections.db import Database, Tx
from projections.framework import Projection
from streams.ddl import create_racing
from streams.relay_position import RelayPositionStore
from streams.topics import Topics

OFFSETS = "kafka_offsets"
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Consumed:
    """One consumed message: where it came from and its envelope."""

    topic: str
    partition: int
    offset: int
    envelope: Envelope


def create_tables(db: Database, projections: Sequence[Projection]) -> None:
    text, num = db.column_type("text"), db.column_type("int")
    with db.transaction() as tx:
        tx.execute(f"CREATE TABLE IF NOT EXISTS {OFFSETS} (consumer {text} NOT NULL, "
                   f"topic {text} NOT NULL, part {num} NOT NULL, next_offset {num} NOT NULL, "
                   f"PRIMARY KEY (consumer, topic, part))")
    for projection in projections:
        projection.create(db)


def stored_offsets(db: Database, consumer: str) -> dict[tuple[str, int], int]:
    """Next offset to apply per (topic, partition) for this consumer group."""
    rows = db.query(f"SELECT topic, part, next_offset FROM {OFFSETS} WHERE consumer = ?",
                    (consumer,))
    return {(r["topic"], int(r["part"])): int(r["next_offset"]) for r in rows}


def projector_offsets(db: Database, consumer: str, topics: Topics | None = None
                      ) -> tuple[dict[tuple[str, int], int],
                                                           dict[tuple[str, int], int]]:
    """(applied, published) per public topic-partition: the next offset applied with the
    rows, and the relay's acknowledged end (not the broker's: see `RelayPositionStore`).
    Either side's tables are created if neither process has yet."""
    positions = RelayPositionStore(db)
    positions.create()
    create_racing(lambda: create_tables(db, ()))
    public = (topics or Topics()).public
    published = {tp: end for tp, end in positions.offsets().items() if tp[0] in public}
    return stored_offsets(db, consumer), published


def apply_consumed(db: Database, projections: Sequence[Projection], consumer: str,
                   batch: Sequence[Consumed], ledger_id: str | None = None) -> int:
    """Apply a batch in one transaction with its offsets; returns how many were new.

    With `ledger_id`, envelopes stamped by another event store (another deployment
    on the same broker) are refused: logged and stepped over, never applied."""
    if not batch:
        return 0
    with db.transaction() as tx:
        offsets = _lock_offsets(tx, db, consumer, sorted({(m.topic, m.partition) for m in batch}))
        fresh = contiguous(batch, offsets)
        envelopes = [m.envelope for m in fresh]
        if ledger_id is not None:
            envelopes = _own(envelopes, ledger_id)
        for projection in projections:
            projection.apply(tx, envelopes)  # the one apply loop, without the position skip
        ends = {(m.topic, m.partition): m.offset + 1 for m in fresh}  # fresh is in offset order
        tx.executemany(f"UPDATE {OFFSETS} SET next_offset = ? "
                       f"WHERE consumer = ? AND topic = ? AND part = ?",
                       [(end, consumer, t, p) for (t, p), end in ends.items()])
        return len(fresh)


def contiguous(batch: Sequence[Consumed], offsets: dict[tuple[str, int], int]) -> list[Consumed]:
    """The messages that extend each partition's applied run without a hole, in offset order.

    Duplicates and messages below the stored offset are dropped; a message
    beyond a hole (an offset the consumer never delivered) and everything
    after it in that partition wait for the hole to be filled. Partitions
    are independent (each aggregate lives in one), so the order across them
    does not matter.
    """
    expected = dict(offsets)
    fresh = []
    for m in sorted(batch, key=lambda m: (m.topic, m.partition, m.offset)):
        tp = (m.topic, m.partition)
        if m.offset == expected[tp]:
            fresh.append(m)
            expected[tp] += 1
    return fresh


def _own(envelopes: list[Envelope], ledger_id: str) -> list[Envelope]:
    own = [e for e in envelopes if e.ledger_id in (None, ledger_id)]
    if len(own) != len(envelopes):
        foreign = next(e for e in envelopes if e.ledger_id not in (None, ledger_id))
        log.error("refused %d envelopes from another event store (%s, e.g. %s): another "
                  "deployment shares these topics; give each its own LEDGER_DEPLOYMENT",
                  len(envelopes) - len(own), foreign.ledger_id, foreign.event_id)
    return own


def _lock_offsets(tx: Tx, db: Database, consumer: str,
                  parts: list[tuple[str, int]]) -> dict[tuple[str, int], int]:
    tx.executemany(f"INSERT INTO {OFFSETS} (consumer, topic, part, next_offset) "
                   f"VALUES (?, ?, ?, 0) ON CONFLICT (consumer, topic, part) DO NOTHING",
                   [(consumer, t, p) for t, p in parts])
    lock = " FOR UPDATE" if db.dialect == "postgres" else ""
    offsets = {}
    for topic, part in parts:  # sorted: a fixed lock order, no deadlocks
        rows = tx.execute(f"SELECT next_offset FROM {OFFSETS} WHERE consumer = ? AND topic = ? "
                          f"AND part = ?{lock}", (consumer, topic, part))
        offsets[(topic, part)] = int(rows[0]["next_offset"])
    return offsets


__all__ = ["OFFSETS", "Consumed", "apply_consumed", "contiguous", "create_tables", "projector_offsets",
           "stored_offsets"]
