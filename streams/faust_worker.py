"""Running a Faust app as a worker process (used by `crawl-ledger worker`)."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

import faust

from streams.app import resources


def run_worker(app: faust.App, loglevel: str = "info",
               logging_config: dict[str, Any] | None = None) -> None:
    """Run until SIGTERM/SIGINT (Faust handles both: agents stop, offsets commit).

    The shared resources (HTTP client, database pool) are closed on the
    worker's own loop once the agents have stopped; if the worker never got
    that far, on a fresh loop afterwards. `logging_config` (a dictConfig dict) replaces
    Faust's own logging set-up.
    """
    from faust.worker import Worker

    class LedgerWorker(Worker):
        async def on_shutdown(self) -> None:
            await super().on_shutdown()
            await _close(app)

    Path(app.conf.datadir).parent.mkdir(parents=True, exist_ok=True)
    worker = LedgerWorker(app, loglevel=loglevel, quiet=True, redirect_stdouts=False,
                          logging_config=logging_config)
    try:
        worker.execute_from_commandline()
    except SystemExit as stop:
        if stop.code not in (0, None):
            raise
    finally:
        if not resources(app).closed:
            asyncio.run(_close(app))


async def _close(app: faust.App) -> None:
    try:
        await resources(app).close()
    except Exception:
        logging.getLogger(__name__).exception("closing worker resources failed")
