"""The Kafka projector's offsets in the read-model database (`KafkaOffsetTable`)."""

from __future__ import annotations

from eventstore.database import Database, Tx
from eventstore.side_tables.ports import Offsets
from eventstore.side_tables.schema import KAFKA_OFFSETS

__all__ = ["SqlKafkaOffsets"]


class SqlKafkaOffsets:
    def __init__(self, db: Database) -> None:
        self.db = db

    def stored(self, consumer: str) -> Offsets:
        rows = self.db.query(f"SELECT topic, part, next_offset FROM {KAFKA_OFFSETS} "
                             "WHERE consumer = ?", (consumer,))
        return {(r["topic"], int(r["part"])): int(r["next_offset"]) for r in rows}

    def lock(self, tx: Tx, consumer: str, parts: list[tuple[str, int]]) -> Offsets:
        tx.executemany(f"INSERT INTO {KAFKA_OFFSETS} (consumer, topic, part, next_offset) "
                       f"VALUES (?, ?, ?, 0) ON CONFLICT (consumer, topic, part) DO NOTHING",
                       [(consumer, t, p) for t, p in parts])
        offsets = {}
        for topic, part in parts:  # sorted by the caller: a fixed lock order, no deadlocks
            rows = tx.execute(f"SELECT next_offset FROM {KAFKA_OFFSETS} WHERE consumer = ? "
                              f"AND topic = ? AND part = ?{tx.row_lock}", (consumer, topic, part))
            offsets[(topic, part)] = int(rows[0]["next_offset"])
        return offsets

    def advance(self, tx: Tx, consumer: str, ends: Offsets) -> None:
        tx.executemany(f"UPDATE {KAFKA_OFFSETS} SET next_offset = ? "
                       f"WHERE consumer = ? AND topic = ? AND part = ?",
                       [(end, consumer, t, p) for (t, p), end in ends.items()])
