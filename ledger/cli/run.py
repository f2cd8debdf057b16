"""`crawl-ledger run [--until-idle] [--concurrency N]`: the embedded runner."""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import signal
from typing import Any

from eventstore import Holder, StoreLocked
from ledger.bootstrap import Ledger, backend_for, bootstrap, notifier_for, runner_crawler
from ledger.cli.arguments import number
from ledger.cli.context import add_metrics_port, serve_metrics
from ledger.cli.errors import CommandError
from ledger.cli.progress import LiveStats, stats_table
from ledger.drivers.crawl_process import CrawlProcess
from ledger.drivers.embedded import EmbeddedRunner, RunStats, run_loop
from ledger.settings import Settings
from runtime.clock import SystemClock
from runtime.defaults import DEFAULTS
from runtime.proxy_pool import ProxyKeeper
from workers.crawler import Crawler

log = logging.getLogger(__name__)


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
    run.add_argument("--crawl-process", action=argparse.BooleanOptionalAction, default=None,
                     help="crawl in a child process, so crawling and recording use two CPUs "
                          "(default: when this process may use more than one: its CPU affinity and "
                          "its cgroup's CPU quota)")
    add_metrics_port(run)
    run.set_defaults(handler=run_embedded)


def run_embedded(args: argparse.Namespace) -> int:
    if not 1 <= args.concurrency <= 256:
        raise CommandError("--concurrency must be 1..256")
    if not 0 <= args.stop_deadline <= 3600:  # also refuses nan
        raise CommandError("--stop-deadline must be 0..3600 seconds")
    settings = Settings.from_env()
    serve_metrics(args.metrics_port)
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
        async with runner_crawler(settings, args.crawl_process) as crawler, \
                notifier_for(settings) as notifier:
            with LiveStats("crawl-ledger run") as live:
                runner = EmbeddedRunner(ledger, crawler, SystemClock(),
                                        concurrency=args.concurrency, lease_ttl=args.lease_ttl,
                                        on_change=live.update, images=crawler, alerts=notifier,
                                        proxies=await asyncio.to_thread(keeper_for, ledger,
                                                                        crawler))
                stopping = Stopping(runner, args.stop_deadline)
                loop = asyncio.get_running_loop()
                for sig in (signal.SIGINT, signal.SIGTERM):
                    loop.add_signal_handler(sig, stopping.signalled)
                return await runner.run(until_idle=args.until_idle)
    finally:
        await asyncio.to_thread(ledger.close)


def keeper_for(ledger: Ledger, crawler: Crawler | CrawlProcess) -> ProxyKeeper | None:
    """The proxy pool's keeper (creates the tables beside the log; connects)."""
    if crawler.egress is None:
        return None
    return ProxyKeeper(ledger, ledger.tables.proxies, crawler.egress.pool, SystemClock().now)


class Stopping:
    """The first signal stops the runner gracefully; a second one exits at once (the
    leases left behind are expired when a runner next starts on the store)."""

    def __init__(self, runner: EmbeddedRunner, deadline: float) -> None:
        self.runner, self.deadline, self.signals = runner, deadline, 0

    def signalled(self) -> None:
        self.signals += 1
        if self.signals > 1:
            log.warning("second signal: exiting now")
            os._exit(130)
        log.warning("stopping: crawls in flight have %g s to finish (a second signal exits at "
                    "once)", self.deadline)
        self.runner.stop(self.deadline)
