"""Dashboard sessions: a token signs in once, the browser then carries a cookie.

The session cookie (`crawl_ledger_session`) is a random id, HttpOnly, SameSite=Strict,
and Secure when the dashboard is served over TLS. The session lives in the side
table `dashboard_sessions` (`SessionTable`, `ledger.tables.sessions`), so it outlives
a restart of the server: its row holds the sha256 of the cookie (a copy of the table
opens no session), the sha256 of the token it was opened with (never the token), its
CSRF secret, when it was last used and the last action's outcome, shown once. It ends
by signing out, by 12 hours unused, or by revoking its token: every request checks
the token again. Every form carries the session's CSRF secret (`csrf` field) and every
state-changing API call made with the cookie must send it as `X-CSRF-Token`.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import time
from collections.abc import Callable

from api.auth import Token, TokenStore
from runtime.tables import SessionTable

__all__ = ["COOKIE", "IDLE", "Session", "Sessions"]

COOKIE = "crawl_ledger_session"
#: a session unused this long (seconds) is forgotten
IDLE = 12 * 3600
#: a session's last use is written at most this often (seconds): not on every request
TOUCH_EVERY = 60.0


class Session:
    """One signed-in browser: its CSRF secret, and what its last action did (`flash`,
    shown once by the page it redirected to: post/redirect/get)."""

    def __init__(self, table: SessionTable, key: str, csrf: str) -> None:
        self._table, self._key, self.csrf = table, key, csrf

    @property
    def flash(self) -> dict[str, str]:
        stored = self._table.get(self._key)
        return dict(stored.flash) if stored else {}

    @flash.setter
    def flash(self, outcomes: dict[str, str]) -> None:
        self._table.put_flash(self._key, dict(outcomes))

    def take_flash(self) -> dict[str, str]:
        return self._table.take_flash(self._key)


class Sessions:
    def __init__(self, tokens: TokenStore, table: SessionTable, idle: float = IDLE,
                 now: Callable[[], float] = time.time) -> None:
        """`now`: seconds since the epoch (wall time: a session outlives the process)."""
        self.tokens = tokens
        self.table = table
        self.idle = idle
        self.now = now

    def open(self, secret: str) -> tuple[str, Token] | None:
        """A new session for a valid token (None for an invalid one or a bot token)."""
        token = self.tokens.verify(secret)
        if token is None or token.scope == "bot":
            return None
        session_id = secrets.token_urlsafe(32)
        now = self.now()
        self.table.forget_idle(now - self.idle)
        self.table.open(_key(session_id), TokenStore.digest(secret), secrets.token_urlsafe(24),
                        now)
        return session_id, token

    def get(self, session_id: str | None) -> tuple[Session, Token] | None:
        """The live session and its token, if the id is known and the token not revoked."""
        if not session_id:
            return None
        key, now = _key(session_id), self.now()
        stored = self.table.get(key)
        if stored is None:
            return None
        if now - stored.used_at > self.idle:
            self.table.close(key)
            return None
        token = self.tokens.live(stored.token_digest)
        if token is None:
            self.table.close(key)
            return None
        if now - stored.used_at >= TOUCH_EVERY:
            self.table.touch(key, now)
        return Session(self.table, key, stored.csrf), token

    def close(self, session_id: str | None) -> None:
        if session_id:
            self.table.close(_key(session_id))

    @staticmethod
    def csrf_ok(session: Session, sent: str | None) -> bool:
        return bool(sent) and hmac.compare_digest(session.csrf, sent or "")


def _key(session_id: str) -> str:
    """The table's key for a cookie: its sha256 (the cookie itself is never stored)."""
    return hashlib.sha256(session_id.encode()).hexdigest()
