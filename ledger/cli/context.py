"""What every CLI command needs: the wired ledger, the clock, durations."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import Any

from ledger.bootstrap import Ledger, bootstrap
from ledger.cli.errors import CommandError
from ledger.settings import Settings
from runtime.clock import SystemClock

UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def utcnow() -> datetime:
    """The CLI's clock (the system clock): the time of every event a command records."""
    return SystemClock().now()


@contextmanager
def open_ledger(fresh: bool = True, create: bool = False) -> Iterator[Ledger]:
    """Bootstrap from the environment; with `fresh`, catch the read models up first.

    Only a command that adds something (`create`: a store, a job, a token…) may start
    a new embedded ledger: the others refuse a data directory that holds none, so a
    mistyped `LEDGER_DATA_DIR` is an error, not an empty answer."""
    settings = Settings.from_env()
    if not create:
        require_existing(settings)
    ledger = bootstrap(settings)
    try:
        if fresh:
            ledger.catch_up()
        yield ledger
    finally:
        ledger.close()


def require_existing(settings: Settings) -> None:
    """Refuse (one line, exit 2) an embedded store that does not exist yet."""
    if settings.is_postgres or settings.sqlite_path.exists():
        return
    if os.environ.get("LEDGER_STORE"):
        where = f"LEDGER_STORE names {settings.sqlite_path}"
    else:
        where = f"LEDGER_DATA_DIR={settings.data_dir}"
    raise CommandError(f"no ledger here ({where}, which holds no ledger.sqlite): check the "
                       "variable, or create one with `stores add` or `jobs schedule`")


def parse_duration(text: str) -> int:
    """'90s', '30m', '4h', '1d', '1h30m' -> seconds."""
    parts = re.findall(r"(\d+)\s*([smhdw])", text.strip().lower())
    if not parts or "".join(n + u for n, u in parts) != re.sub(r"\s", "", text.lower()):
        raise CommandError(f"bad duration {text!r}: use e.g. 90s, 30m, 4h, 1d or 1h30m")
    return sum(int(n) * UNITS[u] for n, u in parts)


def format_duration(seconds: int | float | None) -> str:
    if seconds is None:
        return "once"
    seconds = int(seconds)
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds % size == 0 and seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def add_metrics_port(parser: Any) -> None:
    parser.add_argument("--metrics-port", type=int, default=None, metavar="PORT",
                        help="serve this process's Prometheus metrics (crawl_ledger_*) on "
                             "127.0.0.1:PORT/metrics")


def serve_metrics(port: int | None) -> None:
    """Expose the process's metrics (runtime/metrics.py) on loopback, if asked."""
    if port is None:
        return
    if not 1 <= port <= 65535:
        raise CommandError(f"--metrics-port must be 1..65535, not {port}")
    from prometheus_client import start_http_server

    try:
        start_http_server(port, addr="127.0.0.1")
    except OSError as error:
        raise CommandError(f"cannot serve metrics on 127.0.0.1:{port}: {error.strerror}") from None

