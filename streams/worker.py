"""Running a Faust app as a worker process (used by `crawl-ledger worker`)."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import faust

from streams.app import resources


def run_worker(app: faust.App, loglevel: str = "info") -> None:
    """Run until SIGTERM/SIGINT (Faust handles both: agents stop, offsets commit)."""
    from faust.worker import Worker

    Path(app.conf.datadir).parent.mkdir(parents=True, exist_ok=True)
    worker = Worker(app, loglevel=loglevel, quiet=True, redirect_stdouts=False)
    try:
        worker.execute_from_commandline()
    except SystemExit as stop:
        if stop.code not in (0, None):
            raise
    finally:
        _close(app)


def _close(app: faust.App) -> None:
    try:
        asyncio.run(resources(app).close())
    except Exception:
        logging.getLogger(__name__).exception("closing worker resources failed")
