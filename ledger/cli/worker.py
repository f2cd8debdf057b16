"""`crawl-ledger worker [--role dispatch|crawl|project|alert|image|all]`: a Faust worker process.

Needs LEDGER_STORE=postgresql://… and LEDGER_BROKER=kafka://…. Creates the
topics if missing (fixed partition count), then runs the agents of its roles
until SIGTERM/SIGINT.
"""

from __future__ import annotations

import argparse
import os
from typing import Any

from ledger.cli.arguments import number
from ledger.cli.context import add_metrics_port, serve_metrics
from ledger.cli.errors import CommandError
from ledger.settings import Settings
from runtime.defaults import DEFAULTS


def register(sub: Any) -> None:
    worker = sub.add_parser("worker", help="run Faust agents (distributed deployment)")
    worker.add_argument("--role", action="append", default=None,
                        help="dispatch, crawl, project, alert, image or all (repeatable, "
                             "comma-separated; default all)")
    worker.add_argument("--partitions", type=number(1, 1024, integer=True), default=4,
                        help="topic partitions (default 4)")
    worker.add_argument("--concurrency", type=number(1, 1024, integer=True), default=4,
                        help="parallel crawls, and image downloads of the image role "
                             "(default 4)")
    worker.add_argument("--lease-ttl", type=number(1, 86400), default=DEFAULTS.lease_ttl,
                        help=f"seconds (default {DEFAULTS.lease_ttl:g})")
    worker.add_argument("--tick", type=number(0.01, 3600), default=DEFAULTS.tick_seconds,
                        help=f"leader tick interval in seconds (default {DEFAULTS.tick_seconds:g})")
    worker.add_argument("--no-timers", action="store_true",
                        help="no leader tick/reaper: an external driver schedules (demo clock)")
    worker.add_argument("--dispatch-ahead", type=number(1, 100_000, integer=True), default=512,
                        help="jobs the leader keeps dispatched and waiting for a crawl "
                             "worker (default 512): each tick tops the queue up to this")
    worker.add_argument("--redrive-after", type=number(0, 86400), default=60.0,
                        help="re-send work for jobs dispatched but unleased this long (s)")
    worker.add_argument("--stall-check", type=number(0.1, 3600), default=5.0,
                        help="seconds between checks for a projection stuck behind the relay")
    worker.add_argument("--datasets-every", type=number(0, 86400), default=30.0,
                        help="seconds between Parquet dataset catch-ups by the projecting "
                             "leader (0: off; analysts' commands catch up anyway)")
    worker.add_argument("--images-every", type=number(0, 86400), default=30.0,
                        help="seconds between the image leader's sweeps of images the read "
                             "model lists as pending (0: off; new image URLs are fetched as "
                             "their events arrive)")
    worker.add_argument("--clock-file", default=None,
                        help="read 'now' from this file (the demo's simulated clock)")
    worker.add_argument("--loglevel", default=None, choices=("debug", "info", "warning", "error"),
                        help="default: LEDGER_LOG_LEVEL, else info")
    add_metrics_port(worker)
    worker.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from ledger.bootstrap import components
    from ledger.host.logs import logging_config
    from streams.app import UnknownRole, create_app, parse_roles
    from streams.faust_worker import run_worker
    from streams.resources import WorkerOptions
    from streams.topics import Topics, ensure_topics

    settings = Settings.from_env()
    if not settings.is_postgres:
        raise CommandError("workers need the PostgreSQL event store (LEDGER_STORE=postgresql://…)")
    try:
        roles = parse_roles(args.role or ["all"])
    except UnknownRole as error:
        raise CommandError(str(error)) from None
    if not 1 <= args.concurrency <= 256 or not 1 <= args.partitions <= 1024:
        raise CommandError("--concurrency must be 1..256 and --partitions 1..1024")
    ensure_topics(settings.broker_servers, args.partitions, Topics(settings.deployment).all)
    options = WorkerOptions(partitions=args.partitions, crawl_concurrency=args.concurrency,
                            lease_ttl=args.lease_ttl, tick_interval=args.tick,
                            timers=not args.no_timers, redrive_after=args.redrive_after,
                            dispatch_ahead=args.dispatch_ahead,
                            stall_check=args.stall_check, datasets_every=args.datasets_every,
                            images_every=args.images_every, image_concurrency=args.concurrency,
                            clock_file=args.clock_file)
    env = dict(os.environ, **({"LEDGER_LOG_LEVEL": args.loglevel} if args.loglevel else {}))
    config = logging_config(env, "worker")
    serve_metrics(args.metrics_port)
    run_worker(create_app(components(settings), roles, options), loglevel=config["root"]["level"],
               logging_config=config)
    return 0
