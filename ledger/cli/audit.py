"""`crawl-ledger audit checkpoint|verify`: tamper evidence for the event log."""

from __future__ import annotations

import argparse
from typing import Any

from ledger.cli.context import open_ledger
from ledger.cli.output import print_json
from projections import audit


def register(sub: Any) -> None:
    group = sub.add_parser("audit", help="hash-chain checkpoints over the event log")
    actions = group.add_subparsers(dest="action", required=True, metavar="ACTION")
    point = actions.add_parser("checkpoint", help="extend the hash chain to the head and record it")
    point.add_argument("--json", action="store_true")
    point.set_defaults(handler=run_checkpoint)
    check = actions.add_parser("verify", help="recompute the chain and compare with checkpoints")
    check.add_argument("--expect", help="a head hash kept outside the system")
    check.add_argument("--json", action="store_true")
    check.set_defaults(handler=run_verify)


def run_checkpoint(args: argparse.Namespace) -> int:
    with open_ledger(fresh=False) as ledger:
        head = audit.checkpoint(ledger.source, ledger.db)
    if args.json:
        print_json(vars(head))
    else:
        print(f"checkpoint at position {head.position} ({head.events} events): {head.chain_hash}")
        print("keep this hash somewhere the ledger's operators cannot write; "
              "`crawl-ledger audit verify --expect HASH` checks the log still leads to it")
    return 0


def run_verify(args: argparse.Namespace) -> int:
    with open_ledger(fresh=False) as ledger:
        verdict = audit.verify(ledger.source, ledger.db, args.expect)
    if args.json:
        print_json({"ok": verdict.ok, "events": verdict.checked, "head": vars(verdict.head),
                    "message": verdict.message})
    elif verdict.ok:
        print(f"verified: {verdict.checked} events, head {verdict.head.chain_hash} "
              f"at position {verdict.head.position}")
    else:
        print(f"TAMPERED: {verdict.message}")
    return 0 if verdict.ok else 1
