"""API token records in the read-model database (`TokenTable`)."""

from __future__ import annotations

from eventstore.database import Database
from eventstore.side_tables.ports import Token
from eventstore.side_tables.schema import TOKENS

__all__ = ["SqlTokens"]

_COLUMNS = "token_id, name, scope, created_at, revoked_at"


class SqlTokens:
    def __init__(self, db: Database) -> None:
        self.db = db

    def insert(self, token: Token, digest: str) -> None:
        with self.db.transaction() as tx:
            tx.execute(f"INSERT INTO {TOKENS} (token_id, digest, name, scope, created_at) "
                       "VALUES (?, ?, ?, ?, ?)",
                       (token.token_id, digest, token.name, token.scope, token.created_at))

    def live(self, digest: str) -> Token | None:
        rows = self.db.query(f"SELECT {_COLUMNS} FROM {TOKENS} "
                             "WHERE digest = ? AND revoked_at IS NULL", (digest,))
        return Token(**rows[0]) if rows else None

    def all(self) -> list[Token]:
        rows = self.db.query(f"SELECT {_COLUMNS} FROM {TOKENS} ORDER BY created_at")
        return [Token(**row) for row in rows]

    def revoke(self, token_id: str, at: str) -> bool:
        with self.db.transaction() as tx:  # one statement: two revokers cannot both win
            return bool(tx.execute(f"UPDATE {TOKENS} SET revoked_at = ? WHERE token_id = ? "
                                   "AND revoked_at IS NULL RETURNING token_id", (at, token_id)))

    def any_live(self) -> bool:
        return bool(self.db.query(f"SELECT token_id FROM {TOKENS} WHERE revoked_at IS NULL "
                                  "LIMIT 1"))
