"""Turning errors into one-line messages and exit codes for the CLI."""

from __future__ import annotations

import sys


class CommandError(Exception):
    """Bad operator input: printed as one line, exit code 2, nothing recorded."""


def report(error: BaseException, *, terminated: bool = False) -> int:
    """One line on stderr for `error` and the exit status; `terminated`: a
    KeyboardInterrupt that SIGTERM raised (`ledger.cli._Termination`)."""
    if isinstance(error, KeyboardInterrupt):  # first: it may have cut an import short
        print(f"crawl-ledger: {'terminated' if terminated else 'interrupted'}", file=sys.stderr)
        return 143 if terminated else 130
    from domain.errors import LedgerError
    from ledger.settings import ConfigError

    if isinstance(error, (CommandError, LedgerError, ConfigError)):
        print(f"crawl-ledger: error: {error}", file=sys.stderr)
        return 2
    raise error
