"""Turning errors into one-line messages and exit codes for the CLI."""

from __future__ import annotations

import sys


class CommandError(Exception):
    """Bad operator input: printed as one line, exit code 2, nothing recorded."""


def report(error: BaseException) -> int:
    if isinstance(error, KeyboardInterrupt):  # first: it may have cut an import short
        print("crawl-ledger: interrupted", file=sys.stderr)
        return 130
    from domain.errors import LedgerError
    from ledger.settings import ConfigError

    if isinstance(error, (CommandError, LedgerError, ConfigError)):
        print(f"crawl-ledger: error: {error}", file=sys.stderr)
        return 2
    raise error
