"""The one console script, `crawl-ledger`, with a module per command group.

Each module in `COMMAND_MODULES` (`ledger.cli.<command>`) has
`register(subparsers)`, which adds its parsers and sets `handler=` (a function
`args -> int` exit code). Only the invoked command's module is imported (the
groups pull in very different libraries: Faust, DuckDB, extruct…); `--help`
imports them all. Operator errors raise `ledger.cli.errors.CommandError` (or a
domain error) and are printed as one line on stderr with a non-zero exit.
"""

from __future__ import annotations

import argparse
import importlib
import os
import signal
import sys
import threading
from collections.abc import Sequence
from types import FrameType
from typing import Any

COMMAND_MODULES = (
    "ledger.cli.stores",
    "ledger.cli.jobs",
    "ledger.cli.products",
    "ledger.cli.images",
    "ledger.cli.events",
    "ledger.cli.projections",
    "ledger.cli.extract",
    "ledger.cli.raw",
    "ledger.cli.simulate",
    "ledger.cli.run",
    "ledger.cli.relay",
    "ledger.cli.worker",
    "ledger.cli.demo",
    "ledger.cli.analytics",
    "ledger.cli.audit",
    "ledger.cli.serve",
    "ledger.cli.schedule",
    "ledger.cli.alerts",
    "ledger.cli.proxies",
)


#: commands registered by another command's module
ALIASES = {"tokens": "serve", "bot": "serve"}


def modules_for(argv: Sequence[str] | None) -> Sequence[str]:
    """The command modules `argv` needs: the invoked one, or all (help, typos)."""
    first = next((arg for arg in argv or () if not arg.startswith("-")), None)
    chosen = f"ledger.cli.{ALIASES.get(first or '', first)}"
    return (chosen,) if chosen in COMMAND_MODULES else COMMAND_MODULES


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    from ledger.cli.arguments import OneLineParser

    parser = OneLineParser(
        prog="crawl-ledger", description="An event-sourced ledger of store crawls."
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in modules_for(argv):
        importlib.import_module(name).register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    from ledger.host.memory import keep_freed_memory_small

    keep_freed_memory_small()  # a crawling process gives its large pages' memory back
    with _Termination() as termination:
        return _main(argv, termination)


def _main(argv: Sequence[str] | None, termination: _Termination) -> int:
    from ledger.cli.errors import report

    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        from ledger.host.logs import configure_logging
        from ledger.host.redact import redacting_output

        with redacting_output(os.environ):  # no password reaches the terminal (ledger/host/redact.py)
            args = build_parser(argv).parse_args(argv)
            try:
                configure_logging(os.environ, args.command)
                return int(args.handler(args) or 0)
            except BrokenPipeError:
                raise
            except Exception as error:  # noqa: BLE001 - every error becomes one clear line
                return report(error)
    except BrokenPipeError:
        return _reader_gone()
    except KeyboardInterrupt as error:  # Ctrl-C before a command handles it (imports, start)
        return report(error, terminated=termination.received)


class _Termination:
    """SIGTERM ends a command as Ctrl-C does (the cleanup on the way out runs, one line,
    `crawl-ledger: terminated`, status 143) until the command handles it itself (`run`'s
    graceful stop, `serve`, `relay`): by default it would kill the process on the spot,
    silently, while `run` connects or starts its crawl process."""

    def __init__(self) -> None:
        self.received = False
        self._previous: Any = None

    def __enter__(self) -> _Termination:
        if threading.current_thread() is threading.main_thread():  # signals go there only
            self._previous = signal.signal(signal.SIGTERM, self._handle)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._previous is not None:
            signal.signal(signal.SIGTERM, self._previous)

    def _handle(self, _signum: int, frame: FrameType | None) -> None:
        self.received = True
        on_interrupt = signal.getsignal(signal.SIGINT)
        if callable(on_interrupt):
            # Python's (raises KeyboardInterrupt) or a running asyncio loop's (cancels its
            # main task, so the command's `finally` blocks run, then raises it)
            on_interrupt(signal.SIGINT, frame)
        else:
            raise KeyboardInterrupt  # SIGINT ignored (a background job): still stop


def _reader_gone() -> int:
    """The output's reader went away (`… | head`): stop quietly, as a Unix tool stopped
    by SIGPIPE does (exit 141), with stdout on /dev/null so that the interpreter's last
    flush of what is still buffered does not fail again."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    return 141


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
