"""The operations API on a free loopback port, for the security tests (a real uvicorn)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from api_server import api_server, bearer  # noqa: F401 - bearer is re-exported to the tests

from api.app import create_app
from api.auth import TokenStore
from ledger.bootstrap import Ledger
from runtime.clock import SystemClock


@contextmanager
def api_on_loopback(ledger: Ledger) -> Iterator[tuple[str, TokenStore]]:
    """(the API's base URL, its token store); the server stops on exit."""
    tokens = TokenStore(ledger.tables.tokens)
    with api_server(create_app(ledger, tokens, SystemClock())) as url:
        yield url, tokens

