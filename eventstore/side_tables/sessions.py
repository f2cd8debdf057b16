"""Dashboard sessions in the read-model database (`SessionTable`)."""

from __future__ import annotations

import json

from eventstore.database import Database
from eventstore.side_tables.ports import StoredSession
from eventstore.side_tables.schema import SESSIONS

__all__ = ["SqlSessions"]


class SqlSessions:
    def __init__(self, db: Database) -> None:
        self.db = db

    def open(self, key: str, token_digest: str, csrf: str, at: float) -> None:
        with self.db.transaction() as tx:
            tx.execute(f"INSERT INTO {SESSIONS} (session_key, token_digest, csrf, used_at, flash) "
                       "VALUES (?, ?, ?, ?, ?)", (key, token_digest, csrf, at, "{}"))

    def get(self, key: str) -> StoredSession | None:
        rows = self.db.query(f"SELECT token_digest, csrf, used_at, flash FROM {SESSIONS} "
                             "WHERE session_key = ?", (key,))
        if not rows:
            return None
        row = rows[0]
        return StoredSession(str(row["token_digest"]), str(row["csrf"]), float(row["used_at"]),
                             {str(k): str(v) for k, v in json.loads(row["flash"]).items()})

    def touch(self, key: str, at: float) -> None:
        with self.db.transaction() as tx:
            tx.execute(f"UPDATE {SESSIONS} SET used_at = ? WHERE session_key = ? "
                       "AND used_at < ?", (at, key, at))

    def put_flash(self, key: str, flash: dict[str, str]) -> None:
        with self.db.transaction() as tx:
            tx.execute(f"UPDATE {SESSIONS} SET flash = ? WHERE session_key = ?",
                       (json.dumps(flash, sort_keys=True), key))

    def take_flash(self, key: str) -> dict[str, str]:
        with self.db.transaction() as tx:
            rows = tx.execute(f"SELECT flash FROM {SESSIONS} WHERE session_key = ?", (key,))
            if not rows or rows[0]["flash"] == "{}":
                return {}
            # cleared only if unchanged since read: two requests never both show it
            taken = tx.execute(f"UPDATE {SESSIONS} SET flash = '{{}}' WHERE session_key = ? "
                               "AND flash = ? RETURNING session_key", (key, rows[0]["flash"]))
        if not taken:
            return {}
        return {str(k): str(v) for k, v in json.loads(rows[0]["flash"]).items()}

    def close(self, key: str) -> None:
        with self.db.transaction() as tx:
            tx.execute(f"DELETE FROM {SESSIONS} WHERE session_key = ?", (key,))

    def forget_idle(self, before: float) -> int:
        with self.db.transaction() as tx:
            return len(tx.execute(f"DELETE FROM {SESSIONS} WHERE used_at < ? "
                                  "RETURNING session_key", (before,)))
