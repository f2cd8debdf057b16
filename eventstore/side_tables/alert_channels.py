"""Alert channels and the alert handler's positions in the read-model database
(`AlertChannelTable`)."""

from __future__ import annotations

from eventstore.database import Database
from eventstore.side_tables.ports import StoredChannel
from eventstore.side_tables.schema import ALERT_CHANNELS, ALERT_POSITIONS

__all__ = ["SqlAlertChannels"]


class SqlAlertChannels:
    def __init__(self, db: Database) -> None:
        self.db = db

    def put(self, subscription_id: str, kind: str, url: str, secret: str | None) -> None:
        with self.db.transaction() as tx:
            tx.execute(f"INSERT INTO {ALERT_CHANNELS} (subscription_id, kind, url, secret) "
                       "VALUES (?, ?, ?, ?) ON CONFLICT (subscription_id) DO UPDATE SET "
                       "kind = excluded.kind, url = excluded.url, secret = excluded.secret",
                       (subscription_id, kind, url, secret))

    def get(self, subscription_id: str) -> StoredChannel | None:
        rows = self.db.query(f"SELECT kind, url, secret FROM {ALERT_CHANNELS} "
                             "WHERE subscription_id = ?", (subscription_id,))
        return StoredChannel(rows[0]["kind"], rows[0]["url"], rows[0]["secret"]) if rows else None

    def delete(self, subscription_id: str) -> None:
        with self.db.transaction() as tx:
            tx.execute(f"DELETE FROM {ALERT_CHANNELS} WHERE subscription_id = ?",
                       (subscription_id,))

    def position(self, name: str) -> int:
        rows = self.db.query(f"SELECT position FROM {ALERT_POSITIONS} WHERE name = ?", (name,))
        return int(rows[0]["position"]) if rows else 0

    def move(self, name: str, position: int) -> None:
        with self.db.transaction() as tx:
            tx.execute(f"INSERT INTO {ALERT_POSITIONS} (name, position) VALUES (?, ?) ON CONFLICT "
                       "(name) DO UPDATE SET position = excluded.position", (name, position))
