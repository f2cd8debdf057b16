"""Dashboard sessions: a token signs in once, the browser then carries a cookie.

The session cookie (`crawl_ledger_session`) is a random id, HttpOnly, SameSite=Strict,
and Secure when the dashboard is served over TLS; the session — the token it was
opened with and its CSRF secret — stays in the server's memory (a restart signs
everyone out). Every request checks the token again, so revoking it ends its
sessions. Every form carries the session's CSRF secret (`csrf` field) and every
state-changing API call made with the cookie must send it as `X-CSRF-Token`.
"""

from __future__ import annotations

import hmac
import secrets
import threading
import time
from dataclasses import dataclass, field

from api.auth import Token, TokenStore

__all__ = ["COOKIE", "Session", "Sessions"]

COOKIE = "crawl_ledger_session"
#: a session unused this long (seconds) is forgotten
IDLE = 12 * 3600


@dataclass
class Session:
    secret: str  # the token the session was opened with (memory only)
    csrf: str
    used: float = field(default_factory=time.monotonic)
    #: what the last action did, shown once by the page it redirected to (post/redirect/get)
    flash: dict[str, str] = field(default_factory=dict)

    def take_flash(self) -> dict[str, str]:
        taken, self.flash = self.flash, {}
        return taken


class Sessions:
    def __init__(self, tokens: TokenStore, idle: float = IDLE) -> None:
        self.tokens = tokens
        self.idle = idle
        self._sessions: dict[str, Session] = {}
        self._lock = threading.Lock()

    def open(self, secret: str) -> tuple[str, Token] | None:
        """A new session for a valid token (None for an invalid one or a bot token)."""
        token = self.tokens.verify(secret)
        if token is None or token.scope == "bot":
            return None
        session_id = secrets.token_urlsafe(32)
        with self._lock:
            self._forget_idle()
            self._sessions[session_id] = Session(secret, secrets.token_urlsafe(24))
        return session_id, token

    def get(self, session_id: str | None) -> tuple[Session, Token] | None:
        """The live session and its token, if the id is known and the token not revoked."""
        if not session_id:
            return None
        with self._lock:
            session = self._sessions.get(session_id)
            if session is None or time.monotonic() - session.used > self.idle:
                self._sessions.pop(session_id, None)
                return None
            session.used = time.monotonic()
        token = self.tokens.verify(session.secret)
        if token is None:
            self.close(session_id)
            return None
        return session, token

    def close(self, session_id: str | None) -> None:
        with self._lock:
            self._sessions.pop(session_id or "", None)

    @staticmethod
    def csrf_ok(session: Session, sent: str | None) -> bool:
        return bool(sent) and hmac.compare_digest(session.csrf, sent or "")

    def _forget_idle(self) -> None:
        cutoff = time.monotonic() - self.idle
        for key in [k for k, s in self._sessions.items() if s.used < cutoff]:
            del self._sessions[key]
