"""API tokens with scopes: only a hash is stored, the token is shown once.

Scopes: `read` sees everything; `operate` also changes jobs and stores; `admin`
also manages tokens and imports an event log (`api/events_import.py`); `bot` only
uses the bot API. A token is 32 random bytes (URL-safe base64, prefixed `cl_`); the side
table `api_tokens` (`TokenTable`, reached as `ledger.tables.tokens`) keeps its sha256,
name, scope and creation/revocation times.
"""

from __future__ import annotations

import hashlib
import secrets
from datetime import datetime

from runtime.tables import Token, TokenTable

__all__ = ["SCOPES", "Token", "TokenStore", "allows"]

SCOPES = ("read", "operate", "admin", "bot")
#: what each scope may do besides itself
_IMPLIES = {"read": {"read"}, "operate": {"read", "operate"},
            "admin": {"read", "operate", "admin"}, "bot": {"bot"}}


def allows(scope: str, needed: str) -> bool:
    return needed in _IMPLIES.get(scope, set())


class TokenStore:
    """Creates, checks and revokes tokens; their records are in `tokens`."""

    def __init__(self, tokens: TokenTable) -> None:
        self.tokens = tokens

    def create(self, scope: str, name: str, now: datetime) -> tuple[str, Token]:
        """(the token — shown once, never stored — and its record)."""
        if scope not in SCOPES:
            raise ValueError(f"scope must be one of {', '.join(SCOPES)}, not {scope!r}")
        secret = "cl_" + secrets.token_urlsafe(32)
        token = Token(secrets.token_hex(4), name or scope, scope, now.isoformat())
        self.tokens.insert(token, _digest(secret))
        return secret, token

    def verify(self, secret: str) -> Token | None:
        """The live token `secret` is, or None."""
        return self.tokens.live(_digest(secret))

    def live(self, digest: str) -> Token | None:
        """The live token whose secret has this sha256 (`digest`), or None."""
        return self.tokens.live(digest)

    @staticmethod
    def digest(secret: str) -> str:
        """What a token's secret is stored and looked up as (its sha256)."""
        return _digest(secret)

    def list(self) -> list[Token]:
        return self.tokens.all()

    def revoke(self, token_id: str, now: datetime) -> bool:
        return self.tokens.revoke(token_id, now.isoformat())

    def any_live(self) -> bool:
        return self.tokens.any_live()


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()
