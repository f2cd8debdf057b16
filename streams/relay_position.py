"""Where the relay is: its position in the notification log and the gaps it gave up on.

Kept in the read-model database (`relay_position`, `relay_gaps`), written
only after the broker acknowledged everything up to that position.
"""

from __future__ import annotations

from dataclasses import dataclass

from projections.db import Database
from streams.ddl import create_racing

POSITION_TABLE = "relay_position"
GAPS_TABLE = "relay_gaps"
OFFSETS_TABLE = "relay_offsets"
Offsets = dict[tuple[str, int], int]


@dataclass(frozen=True)
class StoredPosition:
    position: int
    gaps: int


class RelayPositionStore:
    """The relay's durable progress, under one name (one relay per event store)."""

    def __init__(self, db: Database, name: str = "kafka") -> None:
        self.db = db
        self.name = name

    def create(self) -> None:
        create_racing(self._create)  # the relay and `relay status`/lag readers may race

    def _create(self) -> None:
        text, num = self.db.column_type("text"), self.db.column_type("int")
        with self.db.transaction() as tx:
            tx.execute(f"CREATE TABLE IF NOT EXISTS {POSITION_TABLE} (name {text} PRIMARY KEY, "
                       f"position {num} NOT NULL, gaps {num} NOT NULL)")
            tx.execute(f"CREATE TABLE IF NOT EXISTS {GAPS_TABLE} (name {text} NOT NULL, "
                       f"position {num} NOT NULL, recorded_at {text} NOT NULL, "
                       f"PRIMARY KEY (name, position))")
            tx.execute(f"CREATE TABLE IF NOT EXISTS {OFFSETS_TABLE} (name {text} NOT NULL, "
                       f"topic {text} NOT NULL, part {num} NOT NULL, next_offset {num} NOT NULL, "
                       f"PRIMARY KEY (name, topic, part))")

    def load(self) -> StoredPosition:
        rows = self.db.query(f"SELECT position, gaps FROM {POSITION_TABLE} WHERE name = ?",
                             (self.name,))
        if not rows:
            return StoredPosition(0, 0)
        return StoredPosition(int(rows[0]["position"]), int(rows[0]["gaps"]))

    def save(self, position: int, gaps: list[int], recorded_at: str,
             offsets: Offsets | None = None) -> None:
        """Advance to `position`, recording `gaps` (skipped ids) and the next Kafka offset
        per topic-partition after what was published, in one transaction.

        On PostgreSQL the commit does not wait for its WAL flush (`synchronous_commit`
        off for this transaction only; ~3 % of the relay's time, the producer idle
        meanwhile): a database crash may lose the last saves, and the relay then
        publishes those batches again from the older position, which at-least-once
        delivery allows (consumers dedupe on `event_id`). Never a position ahead
        of what the broker acknowledged."""
        with self.db.transaction() as tx:
            if self.db.dialect == "postgres":
                tx.execute("SET LOCAL synchronous_commit TO off")
            tx.executemany(
                f"INSERT INTO {OFFSETS_TABLE} (name, topic, part, next_offset) VALUES (?, ?, ?, ?) "
                f"ON CONFLICT (name, topic, part) DO UPDATE SET next_offset = CASE "
                f"WHEN excluded.next_offset > {OFFSETS_TABLE}.next_offset "
                f"THEN excluded.next_offset ELSE {OFFSETS_TABLE}.next_offset END",
                [(self.name, t, p, o) for (t, p), o in sorted((offsets or {}).items())])
            tx.executemany(
                f"INSERT INTO {GAPS_TABLE} (name, position, recorded_at) VALUES (?, ?, ?) "
                f"ON CONFLICT (name, position) DO NOTHING",
                [(self.name, gap, recorded_at) for gap in gaps])
            tx.execute(
                f"INSERT INTO {POSITION_TABLE} (name, position, gaps) VALUES (?, ?, ?) "
                f"ON CONFLICT (name) DO UPDATE SET position = excluded.position, "
                f"gaps = {POSITION_TABLE}.gaps + excluded.gaps",
                (self.name, position, len(gaps)))

    def offsets(self) -> Offsets:
        """Next offset after the relay's last acknowledged message, per topic-partition.

        Taken from the produce acknowledgements, not from the broker's end
        offsets (Tansu 0.6 reports those wrongly for multi-record batches).
        """
        rows = self.db.query(f"SELECT topic, part, next_offset FROM {OFFSETS_TABLE} "
                             f"WHERE name = ?", (self.name,))
        return {(r["topic"], int(r["part"])): int(r["next_offset"]) for r in rows}

    def gaps(self) -> list[int]:
        rows = self.db.query(f"SELECT position FROM {GAPS_TABLE} WHERE name = ? ORDER BY position",
                             (self.name,))
        return [int(r["position"]) for r in rows]
