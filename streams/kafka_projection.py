"""Applying envelopes consumed from Kafka to the read models, exactly once in effect.

A consumer sees only its partitions, so global positions are not contiguous
for it: the position-based skip of `Projection.apply_batch` does not apply.
Instead, in one transaction per batch:

- the batch's topic-partition rows in the side table `kafka_offsets` are locked
  (`KafkaOffsetTable.lock`: PostgreSQL `FOR UPDATE`, in a fixed order), so two consumers that briefly own the same
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
from projections.db import Database
from projections.framework import Projection
from runtime.tables import KafkaOffsetTable, Offsets, SideTables
from streams.topics import Topics

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Consumed:
    """One consumed message: where it came from and its envelope."""

    topic: str
    partition: int
    offset: int
    envelope: Envelope


def projector_offsets(tables: SideTables, consumer: str, topics: Topics | None = None
                      ) -> tuple[Offsets, Offsets]:
    """(applied, published) per public topic-partition: the next offset applied with the
    rows, and the relay's acknowledged end (not the broker's: see `RelayPositionTable`)."""
    public = (topics or Topics()).public
    published = {tp: end for tp, end in tables.relay_positions().offsets().items()
                 if tp[0] in public}
    return tables.kafka_offsets.stored(consumer), published


def apply_consumed(db: Database, offsets: KafkaOffsetTable, projections: Sequence[Projection],
                   consumer: str, batch: Sequence[Consumed], ledger_id: str | None = None) -> int:
    """Apply a batch in one transaction with its offsets; returns how many were new.

    With `ledger_id`, envelopes stamped by another event store (another deployment
    on the same broker) are refused: logged and stepped over, never applied."""
    if not batch:
        return 0
    with db.transaction() as tx:
        stored = offsets.lock(tx, consumer, sorted({(m.topic, m.partition) for m in batch}))
        fresh = contiguous(batch, stored)
        envelopes = [m.envelope for m in fresh]
        if ledger_id is not None:
            envelopes = _own(envelopes, ledger_id)
        for projection in projections:
            projection.apply(tx, envelopes)  # the one apply loop, without the position skip
        ends = {(m.topic, m.partition): m.offset + 1 for m in fresh}  # fresh is in offset order
        offsets.advance(tx, consumer, ends)
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


__all__ = ["Consumed", "apply_consumed", "contiguous", "projector_offsets"]
