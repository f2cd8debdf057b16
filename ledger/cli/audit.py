"""`crawl-ledger audit checkpoint|verify|verify-file`: tamper evidence for the event log."""

from __future__ import annotations

import argparse
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any
from uuid import UUID

from ledger.bootstrap import Ledger
from ledger.cli.context import open_ledger
from ledger.cli.errors import CommandError
from ledger.cli.output import print_json
from projections import audit


def chain_hash(text: str) -> str:
    """`--expect`: a chain hash is 64 hex digits (what `audit checkpoint` prints)."""
    cleaned = text.strip().lower()
    if not re.fullmatch(r"[0-9a-f]{64}", cleaned):
        raise argparse.ArgumentTypeError(
            f"{text[:80]!r} is not a chain hash (64 hex digits, as `audit checkpoint` prints)")
    return cleaned


def register(sub: Any) -> None:
    group = sub.add_parser("audit", help="hash-chain checkpoints over the event log")
    actions = group.add_subparsers(dest="action", required=True, metavar="ACTION")
    point = actions.add_parser("checkpoint", help="extend the hash chain to the head and record it")
    point.add_argument("--json", action="store_true")
    point.set_defaults(handler=run_checkpoint)
    check = actions.add_parser("verify", help="recompute the chain and compare with checkpoints")
    check.add_argument("--expect", type=chain_hash,
                         help="a head hash kept outside the system")
    check.add_argument("--json", action="store_true")
    check.set_defaults(handler=run_verify)
    offline = actions.add_parser("verify-file",
                                 help="recompute the chain over a whole-log export (offline)")
    offline.add_argument("file", help="written by `crawl-ledger events export`")
    offline.add_argument("--expect", type=chain_hash,
                         help="a head hash kept outside the system")
    offline.add_argument("--json", action="store_true")
    offline.set_defaults(handler=run_verify_file)


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
        repaired = derived_data(ledger, verdict.streams) if verdict.ok else []
    ok = verdict.ok and not repaired
    if args.json:
        print_json({"ok": ok, "events": verdict.checked, "head": vars(verdict.head),
                    "message": verdict.message, "repaired": repaired})
    elif verdict.ok:
        print(f"verified: {verdict.checked} events, head {verdict.head.chain_hash} "
              f"at position {verdict.head.position}")
        for line in repaired:
            print(f"TAMPERED (derived data, rebuilt from the log): {line}")
    else:
        print(f"TAMPERED: {verdict.message}")
    return 0 if ok else 1


def derived_data(ledger: Ledger, streams: Iterable[str]) -> list[str]:
    """Check the data derived from the log (aggregate snapshots, Parquet datasets) and
    rebuild what is not what the log says; one line per problem found."""
    from projections.datasets import DatasetWriter
    from runtime.integrity import check_snapshots

    problems = check_snapshots(ledger, [UUID(s) for s in streams])
    writer = DatasetWriter(ledger.data_dir, ledger.source)
    problems += [f"dataset file {line}" for line in writer.repair()]
    return problems


def run_verify_file(args: argparse.Namespace) -> int:
    """The hash chain over an exported log, without the database: an auditor's own copy."""
    from domain.envelope import Envelope

    path = Path(args.file)
    if not path.is_file():
        raise CommandError(f"{args.file}: no such file")
    chain, events, position = audit.GENESIS, 0, 0
    with path.open(encoding="utf-8") as lines:
        for number, line in enumerate(lines, 1):
            try:
                env = Envelope.from_json(line)
            except (ValueError, TypeError, KeyError, AttributeError) as error:
                raise CommandError(f"{args.file}:{number}: not an exported envelope ({error})") from None
            if env.position <= position:
                raise CommandError(f"{args.file}:{number}: position {env.position} is out of order "
                                   "(a whole-log export is in log order)")
            chain, events, position = audit.link(chain, env), events + 1, env.position
    ok = args.expect is None or args.expect == chain
    if args.json:
        print_json({"ok": ok, "events": events, "position": position, "chain_hash": chain})
    elif ok:
        print(f"chain over {events} events, head position {position}: {chain}"
              + (" (matches --expect)" if args.expect else ""))
    else:
        print(f"MISMATCH: the file's chain ends in {chain}, not {args.expect}")
    return 0 if ok else 1
