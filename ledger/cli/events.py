"""`crawl-ledger events tail [--after POSITION] [--json] [--follow]`."""

from __future__ import annotations

import argparse
import time
from typing import Any

from ledger.cli.context import open_ledger
from ledger.cli.errors import CommandError
from ledger.cli.history import describe


def register(sub: Any) -> None:
    events = sub.add_parser("events", help="the event log")
    actions = events.add_subparsers(dest="action", required=True, metavar="ACTION")
    tail = actions.add_parser("tail", help="print events after a position, in order")
    tail.add_argument("--after", type=int, default=0, help="global position (default 0)")
    tail.add_argument("--limit", type=int, help="stop after this many events")
    tail.add_argument("--json", action="store_true", help="one envelope per line")
    tail.add_argument("--follow", action="store_true", help="keep waiting for new events")
    tail.set_defaults(handler=tail_events)


def tail_events(args: argparse.Namespace) -> int:
    if args.after < 0:
        raise CommandError("--after must be >= 0")
    printed = 0
    with open_ledger(fresh=False) as ledger:
        position = args.after
        while args.limit is None or printed < args.limit:
            batch = ledger.source.read(position, 1000)
            for env in batch[: None if args.limit is None else args.limit - printed]:
                print(env.to_json() if args.json else
                      f"{env.position:>8} {env.occurred_at[:19]} {env.event_type:<26} "
                      f"{env.stream_id[:8]} v{env.version} {describe(env)}", flush=True)
                printed += 1
                position = env.position
            if not batch and not args.follow:
                break
            if not batch:
                time.sleep(0.5)  # polling the log: SQLite has no notifications
    return 0
