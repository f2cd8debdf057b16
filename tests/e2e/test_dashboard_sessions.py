"""Dashboard sessions outlive the server on both backends: sign in, stop the server,
start a new one (a new bootstrap) on the same data dir and store, and the cookie still
opens the dashboard; signing out ends it everywhere, and so do idleness and a revoked
token."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path

import backends
import httpx
from api_server import api_server, bot_pages

from api.app import create_app
from api.auth import TokenStore
from api.sessions import COOKIE, IDLE, Sessions
from ledger.bootstrap import Ledger
from runtime.clock import SystemClock

T0 = datetime(2026, 3, 1, 8, 0, tzinfo=UTC)


def operator_token(store_url: str, tmp_path: Path) -> str:
    """An operator's token, created before any server runs."""
    with backends.open_ledger(store_url, tmp_path) as ledger:
        return TokenStore(ledger.tables.tokens).create("operate", "ops", T0)[0]


def test_a_session_survives_a_restart_and_sign_out_ends_it(store_url: str, tmp_path: Path) -> None:
    operator = operator_token(store_url, tmp_path)
    with backends.open_ledger(store_url, tmp_path) as ledger, bot_pages(ledger) as pages, \
            api_server(create_app(ledger, TokenStore(ledger.tables.tokens), SystemClock(),
                                  bot_pages=pages)) as url, \
            httpx.Client(base_url=url) as browser:
        opened = browser.post("/login", data={"token": operator, "next": "/jobs"})
        assert opened.status_code == 303
        cookie = browser.cookies[COOKIE]
        assert browser.get("/jobs").status_code == 200
        stored = ledger.db.query("SELECT * FROM dashboard_sessions")
        assert len(stored) == 1  # neither the cookie nor the token is what is stored
        assert cookie not in str(stored) and operator not in str(stored)
    # a new process's worth of objects: a new bootstrap, a new app, the same store
    with backends.open_ledger(store_url, tmp_path) as ledger, bot_pages(ledger) as pages, \
            api_server(create_app(ledger, TokenStore(ledger.tables.tokens), SystemClock(),
                                  bot_pages=pages)) as url, \
            httpx.Client(base_url=url, cookies={COOKIE: cookie}) as browser:
        page = browser.get("/jobs")
        assert page.status_code == 200  # still signed in
        csrf = re.search(r'data-csrf="([^"]+)"', page.text)
        assert csrf is not None
        assert browser.get("/api/v1/jobs").status_code == 200  # the API takes the cookie too
        other = httpx.Client(base_url=url, cookies={COOKIE: cookie})  # the same cookie elsewhere
        signed_out = browser.post("/logout", data={"csrf": csrf[1]})
        assert signed_out.status_code == 303 and signed_out.headers["location"] == "/login"
        with other:
            assert other.get("/jobs").status_code == 303  # to the sign-in page: ended
            assert other.get("/api/v1/jobs").status_code == 401
        assert ledger.db.query("SELECT * FROM dashboard_sessions") == []


def test_idleness_and_a_revoked_token_end_a_session(ledger: Ledger) -> None:
    tokens = TokenStore(ledger.tables.tokens)
    operator, op_token = tokens.create("operate", "ops", T0)
    reader = tokens.create("read", "viewer", T0)[0]
    now = [1_000_000.0]
    sessions = Sessions(tokens, ledger.tables.sessions, now=lambda: now[0])
    assert sessions.open(tokens.create("bot", "bot", T0)[0]) is None  # no session for a bot
    assert sessions.open("cl_forged") is None
    idle_id = sessions.open(operator)[0]  # type: ignore[index]
    used_id = sessions.open(reader)[0]  # type: ignore[index]
    now[0] += IDLE - 10
    assert sessions.get(used_id) is not None  # used: its idle time starts again
    now[0] += 20
    assert sessions.get(idle_id) is None  # unused for longer than IDLE: ended
    assert sessions.get(used_id) is not None
    # a later server (new objects, the same table) sees the same
    again = Sessions(TokenStore(ledger.tables.tokens), ledger.tables.sessions, now=lambda: now[0])
    assert again.get(idle_id) is None and again.get(used_id) is not None
    revoked_id = again.open(operator)[0]  # type: ignore[index]
    assert tokens.revoke(op_token.token_id, T0)
    assert again.get(revoked_id) is None  # the token checked again: revoked ends it
    assert len(ledger.db.query("SELECT * FROM dashboard_sessions")) == 1  # the reader's
