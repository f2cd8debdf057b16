"""`crawl-ledger run [--until-idle] [--concurrency N]`: the embedded runner."""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys
from typing import Any

from eventstore import Holder, StoreLocked
from ledger.bootstrap import backend_for, bootstrap, crawler_for
from ledger.cli.arguments import number
from ledger.cli.errors import CommandError
from ledger.cli.progress import LiveStats, stats_table
from ledger.embedded import EmbeddedRunner, RunStats, run_loop
from ledger.settings import Settings
from runtime.clock import SystemClock
from runtime.defaults import DEFAULTS


def register(sub: Any) -> None:
    run = sub.add_parser("run", help="run scheduler, crawl workers and projections in-process")
    run.add_argument("--until-idle", action="store_true",
                     help="stop when nothing is due, queued or running")
    run.add_argument("--concurrency", type=number(1, 1024, integer=True), default=8, help="parallel crawls (default 8)")
    run.add_argument("--lease-ttl", type=number(1, 86400), default=DEFAULTS.lease_ttl,
                     help=f"seconds (default {DEFAULTS.lease_ttl:g})")
    run.add_argument("--stop-deadline", type=number(0, 3600), default=DEFAULTS.stop_deadline,
                     help="seconds crawls in flight get to finish after SIGTERM/SIGINT before "
                          f"their leases are released (default {DEFAULTS.stop_deadline:g}); "
                          "a second signal exits at once")
    run.set_defaults(handler=run_embedded)


def run_embedded(args: argparse.Namespace) -> int:
    if not 1 <= args.concurrency <= 256:
        raise CommandError("--concurrency must be 1..256")
    if not 0 <= args.stop_deadline <= 3600:  # also refuses nan
        raise CommandError("--stop-deadline must be 0..3600 seconds")
    settings = Settings.from_env()
    try:
        with backend_for(settings).runner_lock(Holder.this_process()):
            stats = run_loop(_run(settings, args))
    except StoreLocked as error:
        raise CommandError(str(error)) from None
    LiveStats().console.print(stats_table(stats, "run finished"))
    return 0


async def _run(settings: Settings, args: argparse.Namespace) -> RunStats:
    ledger = await asyncio.to_thread(bootstrap, settings)  # connects: not on the loop
    try:
        async with crawler_for(settings) as crawler:
            with LiveStats("crawl-ledger run") as live:
                runner = EmbeddedRunner(ledger, crawler, SystemClock(),
                                        concurrency=args.concurrency, lease_ttl=args.lease_ttl,
                                        on_change=live.update)
                stopping = Stopping(runner, args.stop_deadline)
                loop = asyncio.get_running_loop()
                for sig in (signal.SIGINT, signal.SIGTERM):
                    loop.add_signal_handler(sig, stopping.signalled)
                return await runner.run(until_idle=args.until_idle)
    finally:
        await asyncio.to_thread(ledger.close)


class Stopping:
    """The first signal stops the runner gracefully; a second one exits at once (the
    leases left behind are expired when a runner next starts on the store)."""

    def __init__(self, runner: EmbeddedRunner, deadline: float) -> None:
        self.runner, self.deadline, self.signals = runner, deadline, 0

    def signalled(self) -> None:
        self.signals += 1
        if self.signals > 1:
            sys.stderr.write("crawl-ledger: second signal: exiting now\n")
            sys.stderr.flush()
            os._exit(130)
        sys.stderr.write(f"crawl-ledger: stopping: crawls in flight have {self.deadline:g} s to "
                         "finish (a second signal exits at once)\n")
        sys.stderr.flush()
        self.runner.stop(self.deadline)
