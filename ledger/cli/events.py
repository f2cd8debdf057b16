"""The event log, for scripts and auditors.

    crawl-ledger events tail [--after POSITION] [--limit N] [--json] [--follow]
    crawl-ledger events export -o FILE [--stream ID] [--until POSITION]
    crawl-ledger events import FILE [--expect HASH]

`export` writes envelopes (JSON Lines, the `tail --json` objects, each with the
stored event's topic and state, the previous position and the audit chain
hash: `runtime/admin/export_file.py`) of the whole log or of one stream. A whole-log
export also prints the audit hash chain at its last event: the value `audit
checkpoint` records for the same position, which `audit verify-file FILE
--expect HASH` checks offline. `import` replays a whole-log export into an
empty event store (`runtime/admin/log_import.py`).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
import time
import uuid
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import Progress

from ledger.cli.arguments import number
from ledger.cli.audit import chain_hash
from ledger.cli.context import open_ledger
from ledger.cli.errors import CommandError
from ledger.cli.history import describe
from runtime.ledger import Ledger

#: any global position (or count of events)
POSITIONS = 2**62


def register(sub: Any) -> None:
    events = sub.add_parser("events", help="the event log")
    actions = events.add_subparsers(dest="action", required=True, metavar="ACTION")
    tail = actions.add_parser("tail", help="print events after a position, in order")
    tail.add_argument("--after", type=number(0, POSITIONS, integer=True), default=0,
                        help="global position (default 0)")
    tail.add_argument("--limit", type=number(1, POSITIONS, integer=True),
                        help="stop after this many events")
    tail.add_argument("-n", "--last", type=number(1, 1_000_000, integer=True), metavar="N",
                      help="start with the last N events (instead of --after)")
    tail.add_argument("--json", action="store_true", help="one envelope per line")
    tail.add_argument("--follow", action="store_true", help="keep waiting for new events")
    tail.set_defaults(handler=tail_events)
    export = actions.add_parser("export", help="write the log, or one stream, as JSON Lines")
    export.add_argument("-o", "--output", required=True, help="file to write (- for stdout)")
    export.add_argument("--stream", help="only this stream (aggregate id)")
    export.add_argument("--until", type=number(0, POSITIONS, integer=True),
                        help="last global position to include")
    export.set_defaults(handler=export_events)
    load = actions.add_parser("import", help="replay a whole-log export into an empty store")
    load.add_argument("file", help="written by `crawl-ledger events export`")
    load.add_argument("--expect", type=chain_hash,
                      help="the audit chain hash the export printed (refuse any other file)")
    load.set_defaults(handler=import_events)


def tail_events(args: argparse.Namespace) -> int:
    if args.after < 0:
        raise CommandError("--after must be >= 0")
    if args.last is not None and args.after:
        raise CommandError("-n/--last and --after exclude each other")
    printed = 0
    with open_ledger(fresh=False) as ledger:
        position = args.after if args.last is None else _before_last(ledger, args.last)
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


def _before_last(ledger: Ledger, count: int) -> int:
    """The position after which the log's last `count` events start (positions may
    have gaps, so the window widens until it holds them)."""
    head = ledger.source.head()
    window = count
    while True:
        after = max(0, head - window)
        positions = [e.position for e in ledger.source.read(after, head - after)]
        if len(positions) >= count or after == 0:
            return positions[-count - 1] if len(positions) > count else after
        window *= 2


def _stream_id(text: str) -> str:
    try:
        return str(uuid.UUID(text))
    except ValueError:
        raise CommandError(f"--stream: {text!r} is not an aggregate id (a UUID)") from None


def export_events(args: argparse.Namespace) -> int:
    from domain.envelope import from_stored_rows
    from eventstore.chain import GENESIS, next_link
    from runtime.admin.export_file import export_line

    stream = _stream_id(args.stream) if args.stream else None
    if args.until is not None and args.until < 1:
        raise CommandError("--until must be >= 1")
    to_stdout = args.output == "-"
    target = Path(args.output)
    if not to_stdout and not target.parent.is_dir():
        raise CommandError(f"cannot write {args.output}: {target.parent} is not a directory")
    scratch = target.with_name(f".{target.name}.partial")
    digest, chain, count, last = hashlib.sha256(), GENESIS, 0, 0
    console = Console(stderr=True, soft_wrap=True)  # hashes stay on one line
    with open_ledger(fresh=False) as ledger:
        head = ledger.source.head() if args.until is None else min(args.until, ledger.source.head())
        out = sys.stdout if to_stdout else scratch.open("w", encoding="utf-8")
        try:
            with Progress(console=console, transient=True, disable=not console.is_terminal) as bar:
                task = bar.add_task("exporting", total=head)
                position = 0
                while position < head:
                    # the records as stored (ids as 32 hex digits), as the chain hashes them
                    rows = [r[:5] for r in ledger.backend.chain_rows(
                        ledger.app.recorder, position, 5000) if r[0] <= head]
                    if not rows:
                        break
                    for row, env in zip(rows, from_stored_rows(rows)):
                        previous, chain = position, next_link(chain, *row)
                        position = env.position
                        if stream is None or env.stream_id == stream:
                            line = export_line(row, env, previous, chain.hex())
                            out.write(line)
                            digest.update(line.encode())
                            count, last = count + 1, env.position
                    bar.update(task, completed=position)
        except BaseException:
            if not to_stdout:
                out.close()
                scratch.unlink(missing_ok=True)  # a complete file or none
            raise
        if not to_stdout:
            out.close()
            if stream is not None and count == 0:
                scratch.unlink()
            else:
                os.replace(scratch, target)  # a complete file or none
        if stream is not None and count == 0:
            raise CommandError(f"no events for stream {stream}")
    where = "stdout" if to_stdout else args.output
    console.print(f"exported {count} events (last position {last}) to {where}; "
                  f"file sha256 {digest.hexdigest()}", highlight=False)
    if stream is None:
        console.print(f"audit chain hash at position {position}: {chain.hex()}", highlight=False)
    return 0


def import_events(args: argparse.Namespace) -> int:
    from domain.errors import LedgerError
    from runtime.admin.log_import import import_log

    path = Path(args.file)
    if not path.is_file():
        raise CommandError(f"{args.file}: no such file")
    with open_ledger(fresh=False, create=True) as ledger:
        try:
            summary = import_log(ledger, path, args.expect)
        except LedgerError as error:
            raise CommandError(f"nothing imported: {error}") from None
        ledger.catch_up()
    print(f"imported {summary.events} events (last position {summary.position}) from "
          f"{args.file}; audit chain hash at position {summary.position}: {summary.chain_hash}")
    return 0
