"""Where the relay is, in the read-model database (`RelayPositionTable`): its position
in the notification log, the gaps it gave up on, and the next Kafka offset per
topic-partition after what the broker acknowledged; written only after the broker
acknowledged everything up to that position."""

from __future__ import annotations

from eventstore.database import Database
from eventstore.side_tables.ports import Offsets, StoredPosition
from eventstore.side_tables.schema import RELAY_GAPS, RELAY_OFFSETS, RELAY_POSITION

__all__ = ["RelayPositions"]


class RelayPositions:
    """The relay's durable progress, under one name (one relay per event store)."""

    def __init__(self, db: Database, name: str = "kafka") -> None:
        self.db = db
        self.name = name

    def load(self) -> StoredPosition:
        rows = self.db.query(f"SELECT position, gaps FROM {RELAY_POSITION} WHERE name = ?",
                             (self.name,))
        if not rows:
            return StoredPosition(0, 0)
        return StoredPosition(int(rows[0]["position"]), int(rows[0]["gaps"]))

    def save(self, position: int, gaps: list[int], recorded_at: str,
             offsets: Offsets | None = None) -> None:
        """See `RelayPositionTable.save`.

        The commit does not wait to be durable (`Tx.commit_without_flush`: on
        PostgreSQL `synchronous_commit` off for this transaction only; ~3 % of the relay's time, the producer idle
        meanwhile): a database crash may lose the last saves, and the relay then
        publishes those batches again from the older position, which at-least-once
        delivery allows (consumers dedupe on `event_id`). Never a position ahead
        of what the broker acknowledged."""
        with self.db.transaction() as tx:
            tx.commit_without_flush()
            tx.executemany(
                f"INSERT INTO {RELAY_OFFSETS} (name, topic, part, next_offset) VALUES (?, ?, ?, ?) "
                f"ON CONFLICT (name, topic, part) DO UPDATE SET next_offset = CASE "
                f"WHEN excluded.next_offset > {RELAY_OFFSETS}.next_offset "
                f"THEN excluded.next_offset ELSE {RELAY_OFFSETS}.next_offset END",
                [(self.name, t, p, o) for (t, p), o in sorted((offsets or {}).items())])
            tx.executemany(
                f"INSERT INTO {RELAY_GAPS} (name, position, recorded_at) VALUES (?, ?, ?) "
                f"ON CONFLICT (name, position) DO NOTHING",
                [(self.name, gap, recorded_at) for gap in gaps])
            tx.execute(
                f"INSERT INTO {RELAY_POSITION} (name, position, gaps) VALUES (?, ?, ?) "
                f"ON CONFLICT (name) DO UPDATE SET position = excluded.position, "
                f"gaps = {RELAY_POSITION}.gaps + excluded.gaps",
                (self.name, position, len(gaps)))

    def offsets(self) -> Offsets:
        """Next offset after the relay's last acknowledged message, per topic-partition.

        Taken from the produce acknowledgements, not from the broker's end
        offsets (Tansu 0.6 reports those wrongly for multi-record batches).
        """
        rows = self.db.query(f"SELECT topic, part, next_offset FROM {RELAY_OFFSETS} "
                             f"WHERE name = ?", (self.name,))
        return {(r["topic"], int(r["part"])): int(r["next_offset"]) for r in rows}

    def gaps(self) -> list[int]:
        rows = self.db.query(f"SELECT position FROM {RELAY_GAPS} WHERE name = ? "
                             "ORDER BY position", (self.name,))
        return [int(r["position"]) for r in rows]
