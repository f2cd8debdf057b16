"""Shared fixtures: the backend matrix (SQLite file, PostgreSQL schema) and a ledger on it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import backends
import pytest
from invariants import TABLE

from ledger.bootstrap import Ledger


@pytest.fixture(params=[
    "sqlite",
    pytest.param("postgres", marks=pytest.mark.postgres),
])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """LEDGER_STORE for a fresh, empty event store on each backend."""
    with backends.store_url(request.param, tmp_path) as url:
        yield url


@pytest.fixture
def ledger(store_url: str, tmp_path: Path) -> Iterator[Ledger]:
    """A bootstrapped ledger on each backend, closed afterwards."""
    with backends.open_ledger(store_url, tmp_path) as opened:
        yield opened


def pytest_sessionfinish(session: pytest.Session) -> None:
    """In a pytest-xdist worker (`make test` runs two): hand its fault cases to the controller."""
    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:
        workeroutput["fault_table"] = TABLE.rows


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: Any) -> None:
    """In the controller: a finished worker's fault cases join the table."""
    for case, results in getattr(node, "workeroutput", {}).get("fault_table", {}).items():
        for invariant, result in results.items():
            TABLE.rows.setdefault(case, {})[invariant] = result


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """The fault cases' case x invariant table (tests/invariants.py), at the end of the run."""
    if TABLE.rows:
        terminalreporter.section("fault suite: case x invariant")
        for line in TABLE.lines():
            terminalreporter.write_line(line)
