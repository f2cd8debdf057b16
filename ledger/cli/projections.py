"""`crawl-ledger projections rebuild [--verify]`."""

from __future__ import annotations

import argparse
from typing import Any

from rich.progress import Progress

from ledger.cli.context import open_ledger
from ledger.cli.output import print_table
from projections.rebuild import rebuild, verify


def register(sub: Any) -> None:
    projections = sub.add_parser("projections", help="read-model maintenance")
    actions = projections.add_subparsers(dest="action", required=True, metavar="ACTION")
    rb = actions.add_parser("rebuild", help="rebuild the read models from position 0")
    rb.add_argument("--verify", action="store_true",
                    help="rebuild into scratch tables and compare with the live ones")
    rb.set_defaults(handler=rebuild_projections)


def rebuild_projections(args: argparse.Namespace) -> int:
    with open_ledger(fresh=False) as ledger, Progress(transient=True) as progress:
        task = progress.add_task("rebuilding", total=ledger.source.head() or 1)

        def advance(position: int, head: int) -> None:
            progress.update(task, completed=position, total=max(head, 1))

        factory = ledger.projections
        if not args.verify:
            count = rebuild(ledger.source, ledger.db, factory, advance)
            progress.stop()
            print(f"rebuilt {len(factory(''))} read models from {count} events")
            return 0
        comparisons = verify(ledger.source, ledger.db, factory, advance)
    print_table("rebuild vs live", ["table", "live rows", "rebuilt rows", "differing", "equal"],
                ([c.table, c.live_rows, c.rebuilt_rows, c.differing, "yes" if c.equal else "NO"]
                 for c in comparisons))
    equal = all(c.equal for c in comparisons)
    print("verified: the rebuilt read models equal the live ones" if equal
          else "MISMATCH: the rebuilt read models differ from the live ones")
    return 0 if equal else 1
