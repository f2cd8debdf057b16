"""`crawl-ledger relay [status | create-topics]`: the event store -> Kafka relay.

    crawl-ledger relay                  publish the notification log until stopped
    crawl-ledger relay status [--json]  position, head, lag, gaps seen
    crawl-ledger relay create-topics    create the topics with a fixed partition count
"""

from __future__ import annotations

import argparse
import json
import logging
import signal
import threading
import time
from functools import partial
from typing import Any

from ledger.bootstrap import Ledger, bootstrap, event_source, wakeup_for
from ledger.cli.arguments import number
from ledger.cli.errors import CommandError
from ledger.settings import Settings
from streams.relay import (
    ProcessReader,
    Producer,
    Relay,
    RelayMetrics,
    kafka_producer,
    relay_status,
)
from streams.topics import DEFAULT_PARTITIONS, Topics, ensure_topics


def register(sub: Any) -> None:
    relay = sub.add_parser("relay", help="publish stored events to Kafka (distributed)")
    relay.add_argument("--batch-size", type=number(1, 100000, integer=True), default=2000, help="events per batch")
    relay.add_argument("--gap-timeout", type=number(0, 3600), default=3.0,
                       help="seconds to wait for a missing notification id (default 3)")
    relay.add_argument("--partitions", type=number(1, 1024, integer=True), default=DEFAULT_PARTITIONS,
                       help=f"partitions for topics it creates (default {DEFAULT_PARTITIONS})")
    relay.add_argument("--quiet", action="store_true", help="no periodic status lines")
    relay.set_defaults(handler=run_relay)
    actions = relay.add_subparsers(dest="action", metavar="ACTION")
    status = actions.add_parser("status", help="position, head, lag and gaps seen")
    status.add_argument("--json", action="store_true", help="one JSON object")
    status.set_defaults(handler=show_status)
    create = actions.add_parser("create-topics", help="create the Kafka topics")
    create.add_argument("--partitions", type=int, default=DEFAULT_PARTITIONS)
    create.set_defaults(handler=create_topics)


def _open(settings: Settings) -> Ledger:
    if not settings.is_postgres:
        raise CommandError("the relay needs the PostgreSQL event store (LEDGER_STORE=postgresql://…)")
    return bootstrap(settings)


def run_relay(args: argparse.Namespace) -> int:
    settings = Settings.from_env()
    servers = settings.broker_servers
    ensure_topics(servers, args.partitions, Topics(settings.deployment).all)
    ledger = _open(settings)
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    def reconnect() -> Producer:  # after a broker restart: topics may be gone too
        ensure_topics(servers, args.partitions, Topics(settings.deployment).all)
        return kafka_producer(servers)

    wakeup = wakeup_for(ledger.app.recorder, settings.postgres.conninfo, stop)
    # a backlog is read ahead in a child process, off the producer's GIL (streams.relay_reader)
    reader = ProcessReader(partial(event_source, settings))
    relay = Relay(ledger.source, ledger.tables.relay_positions(), kafka_producer(servers),
                  batch_size=args.batch_size, gap_timeout=args.gap_timeout, reconnect=reconnect,
                  ledger_id=ledger.identity, topics=Topics(settings.deployment), reader=reader)
    try:
        relay.run(stop, on_step=None if args.quiet else _status_printer(), wakeup=wakeup)
    finally:
        reader.close()
        wakeup.close()
        relay.producer.close(5)
        ledger.close()
    return 0


def _status_printer(every: float = 10.0) -> Any:
    last = [0.0]

    def show(metrics: RelayMetrics) -> None:
        if time.monotonic() - last[0] >= every:
            last[0] = time.monotonic()
            logging.getLogger("streams.relay").info("relay status", extra=metrics.as_dict())
    return show


def show_status(args: argparse.Namespace) -> int:
    ledger = _open(Settings.from_env())
    try:
        status = relay_status(ledger.source, ledger.tables.relay_positions())
    finally:
        ledger.close()
    if args.json:
        print(json.dumps(status))
    else:
        print("  ".join(f"{k} {v}" for k, v in status.items()))
    return 0


def create_topics(args: argparse.Namespace) -> int:
    settings = Settings.from_env()
    created = ensure_topics(settings.broker_servers, args.partitions,
                            Topics(settings.deployment).all)
    print(f"created {', '.join(created)}" if created else "all topics exist")
    return 0
