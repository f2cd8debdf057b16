"""API tokens with scopes: only a hash is stored, the token is shown once.

Scopes: `read` sees everything; `operate` also changes jobs and stores; `admin`
also manages tokens and imports an event log (`api/events_import.py`); `bot` only
uses the bot API. A token is 32 random bytes (URL-safe base64, prefixed `cl_`); the table `api_tokens` in the read-model
database keeps its sha256, name, scope and creation/revocation times.
"""

from __future__ import annotations

import hashlib
import secrets
import threading
from dataclasses import dataclass
from datetime import datetime

from projections.db import Database

__all__ = ["SCOPES", "Token", "TokenStore", "allows"]

SCOPES = ("read", "operate", "admin", "bot")
#: what each scope may do besides itself
_IMPLIES = {"read": {"read"}, "operate": {"read", "operate"},
            "admin": {"read", "operate", "admin"}, "bot": {"bot"}}
TABLE = "api_tokens"


def allows(scope: str, needed: str) -> bool:
    return needed in _IMPLIES.get(scope, set())


@dataclass(frozen=True)
class Token:
    token_id: str
    name: str
    scope: str
    created_at: str
    revoked_at: str | None = None


class TokenStore:
    """Token hashes in the read-model database (`Database`: SQLite or PostgreSQL)."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self._lock = threading.Lock()
        with db.transaction() as tx:
            tx.execute(f"CREATE TABLE IF NOT EXISTS {TABLE} (token_id TEXT PRIMARY KEY, "
                       "digest TEXT NOT NULL UNIQUE, name TEXT NOT NULL, scope TEXT NOT NULL, "
                       "created_at TEXT NOT NULL, revoked_at TEXT)")

    def create(self, scope: str, name: str, now: datetime) -> tuple[str, Token]:
        """(the token — shown once, never stored — and its record)."""
        if scope not in SCOPES:
            raise ValueError(f"scope must be one of {', '.join(SCOPES)}, not {scope!r}")
        secret = "cl_" + secrets.token_urlsafe(32)
        token = Token(secrets.token_hex(4), name or scope, scope, now.isoformat())
        with self._lock, self.db.transaction() as tx:
            tx.execute(f"INSERT INTO {TABLE} (token_id, digest, name, scope, created_at) "
                       "VALUES (?, ?, ?, ?, ?)",
                       (token.token_id, _digest(secret), token.name, scope, token.created_at))
        return secret, token

    def verify(self, secret: str) -> Token | None:
        """The live token `secret` is, or None."""
        rows = self.db.query(f"SELECT token_id, name, scope, created_at, revoked_at FROM {TABLE} "
                             "WHERE digest = ? AND revoked_at IS NULL", (_digest(secret),))
        return Token(**rows[0]) if rows else None

    def list(self) -> list[Token]:
        rows = self.db.query(f"SELECT token_id, name, scope, created_at, revoked_at FROM {TABLE} "
                             "ORDER BY created_at")
        return [Token(**row) for row in rows]

    def revoke(self, token_id: str, now: datetime) -> bool:
        with self._lock:
            live = self.db.query(f"SELECT token_id FROM {TABLE} WHERE token_id = ? AND "
                                 "revoked_at IS NULL", (token_id,))
            if not live:
                return False
            with self.db.transaction() as tx:
                tx.execute(f"UPDATE {TABLE} SET revoked_at = ? WHERE token_id = ?",
                           (now.isoformat(), token_id))
        return True

    def any_live(self) -> bool:
        return bool(self.db.query(f"SELECT token_id FROM {TABLE} WHERE revoked_at IS NULL"))


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()
