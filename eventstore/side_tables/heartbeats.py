"""Worker heartbeats and bot worker owners in the read-model database
(`HeartbeatTable`, `WorkerOwnerTable`)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from domain.timeutil import iso
from eventstore.database import Database
from eventstore.side_tables.schema import HEARTBEATS, WORKER_OWNERS

__all__ = ["SqlHeartbeats", "SqlWorkerOwners"]


class SqlHeartbeats:
    def __init__(self, db: Database) -> None:
        self.db = db

    def put(self, name: str, at: datetime, in_flight: int, rss_bytes: int,
            cpu_seconds: float) -> None:
        with self.db.transaction() as tx:
            tx.execute(f"DELETE FROM {HEARTBEATS} WHERE name = ?", (name,))
            tx.execute(f"INSERT INTO {HEARTBEATS} (name, at, in_flight, rss_bytes, cpu_seconds) "
                       "VALUES (?, ?, ?, ?, ?)", (name, iso(at), in_flight, rss_bytes, cpu_seconds))

    def latest(self) -> dict[str, dict[str, Any]]:
        return {row["name"]: row for row in self.db.query(f"SELECT * FROM {HEARTBEATS}")}


class SqlWorkerOwners:
    def __init__(self, db: Database) -> None:
        self.db = db

    def claim(self, name: str, token_id: str) -> bool:
        with self.db.transaction() as tx:
            tx.execute(f"INSERT INTO {WORKER_OWNERS} (name, token_id) VALUES (?, ?) "
                       "ON CONFLICT (name) DO NOTHING", (name, token_id))
            rows = tx.execute(f"SELECT token_id FROM {WORKER_OWNERS} WHERE name = ?", (name,))
        return bool(rows) and rows[0]["token_id"] == token_id

    def owns(self, name: str, token_id: str) -> bool:
        with self.db.transaction() as tx:
            rows = tx.execute(f"SELECT token_id FROM {WORKER_OWNERS} WHERE name = ?", (name,))
        return bool(rows) and rows[0]["token_id"] == token_id
