"""The operations API on a free loopback port, for the security tests (a real uvicorn)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from api_server import api_server, bearer, bot_pages  # noqa: F401 - bearer: for the tests

from api.app import create_app
from api.auth import TokenStore
from ledger.bootstrap import Ledger
from runtime.clock import SystemClock


@contextmanager
def api_on_loopback(ledger: Ledger) -> Iterator[tuple[str, TokenStore]]:
    """(the API's base URL, its token store); the server stops on exit."""
    tokens = TokenStore(ledger.tables.tokens)
    with bot_pages(ledger) as pages, api_server(create_app(ledger, tokens, SystemClock(),
                                                           bot_pages=pages)) as url:
        yield url, tokens

