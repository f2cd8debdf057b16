"""The fault suite prints its case × invariant table at the end of the run."""

from __future__ import annotations

import pytest
from invariants import TABLE


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if TABLE.rows:
        terminalreporter.section("fault suite: case x invariant")
        for line in TABLE.lines():
            terminalreporter.write_line(line)
