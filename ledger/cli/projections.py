"""`crawl-ledger projections checkpoint` and `projections rebuild [--from-zero] [--verify]`."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from rich.progress import Progress

from ledger.cli.context import open_ledger
from ledger.cli.output import print_json, print_table
from projections.checkpoints import Refused, describe
from projections.rebuild import rebuild, rebuild_from_checkpoint, verify


def register(sub: Any) -> None:
    projections = sub.add_parser("projections", help="read-model maintenance")
    actions = projections.add_subparsers(dest="action", required=True, metavar="ACTION")
    rb = actions.add_parser("rebuild", help="rebuild the read models from the latest valid "
                            "checkpoint (or position 0), replaying the events after it")
    rb.add_argument("--from-zero", action="store_true",
                    help="ignore the checkpoints: replay every event from position 0")
    rb.add_argument("--verify", action="store_true",
                    help="rebuild nothing: replay from position 0 into scratch tables and "
                    "compare them with the live models and with a rebuild from the latest "
                    "checkpoint (made in other scratch tables)")
    rb.set_defaults(handler=rebuild_projections)
    cp = actions.add_parser("checkpoint", help="catch the read models up and take a "
                            "checkpoint of them, tied to the audit chain at their position")
    cp.add_argument("--json", action="store_true")
    cp.set_defaults(handler=take_checkpoint)


def take_checkpoint(args: argparse.Namespace) -> int:
    with open_ledger(fresh=False) as ledger:
        try:
            point = ledger.checkpoint()
        except Refused as refused:
            print(f"error: {refused}", file=sys.stderr)
            return 1
    if args.json:
        print_json(describe(point))
    else:
        print(f"checkpoint {point.id} at position {point.position} (chain link "
              f"{point.link[:16]}…): {len(point.parts)} tables, {point.rows} rows")
    return 0


def rebuild_projections(args: argparse.Namespace) -> int:
    with open_ledger(fresh=False) as ledger, Progress(transient=True) as progress:
        task = progress.add_task("rebuilding", total=ledger.source.head() or 1)

        def advance(position: int, head: int) -> None:
            progress.update(task, completed=position, total=max(head, 1))

        def report(line: str) -> None:
            progress.console.print(line, markup=False, highlight=False, soft_wrap=True)

        factory, models = ledger.projections, len(ledger.projections())
        if args.verify:
            comparisons = verify(ledger.source, ledger.db, factory, advance,
                                 None if args.from_zero else ledger.chain.link_at, report)
        elif args.from_zero:
            count, start = rebuild(ledger.source, ledger.db, factory, advance), "position 0"
        else:
            done = rebuild_from_checkpoint(ledger.source, ledger.db, factory,
                                           ledger.chain.link_at, report, advance)
            count, point = done.replayed, done.checkpoint
            start = ("position 0" if point is None
                     else f"checkpoint {point.id} at position {point.position}")
    if not args.verify:
        print(f"rebuilt {models} read models from {start}: {count} events replayed")
        return 0
    print_table("read models vs a replay from position 0",
                ["table", "rows", "replayed rows", "differing", "equal"],
                ([c.table, c.live_rows, c.rebuilt_rows, c.differing, "yes" if c.equal else "NO"]
                 for c in comparisons))
    for c in comparisons:
        if c.keys:
            print(f"{c.table} differs at {', '.join(c.keys)}"
                  + (" …" if c.differing > len(c.keys) else ""))
    equal = all(c.equal for c in comparisons)
    print("verified: the live read models and the rebuild from the latest checkpoint equal a "
          "replay from position 0" if equal
          else "MISMATCH: the read models differ from a replay from position 0")
    return 0 if equal else 1
