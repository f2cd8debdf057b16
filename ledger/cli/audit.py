"""`crawl-ledger audit checkpoint|verify|repair|verify-file`: tamper evidence for the event
log and the data derived from it. `verify` only reads and reports; `repair` rebuilds
derived data (snapshots, Parquet datasets), and only once the log itself verifies."""

from __future__ import annotations

import argparse
import re
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
    check = actions.add_parser("verify", help="recompute the chain, compare it with the stored "
                               "links and checkpoints, check derived data (reads only)")
    check.add_argument("--expect", type=chain_hash,
                         help="a head hash kept outside the system")
    check.add_argument("--json", action="store_true")
    check.set_defaults(handler=run_verify)
    fix = actions.add_parser("repair", help="once the log verifies, rebuild derived data that "
                             "differs from it (snapshots, Parquet datasets)")
    fix.add_argument("--json", action="store_true")
    fix.set_defaults(handler=run_repair)
    offline = actions.add_parser("verify-file",
                                 help="recompute the chain over a whole-log export (offline)")
    offline.add_argument("file", help="written by `crawl-ledger events export`")
    offline.add_argument("--expect", type=chain_hash,
                         help="a head hash kept outside the system")
    offline.add_argument("--json", action="store_true")
    offline.set_defaults(handler=run_verify_file)


def run_checkpoint(args: argparse.Namespace) -> int:
    with open_ledger(fresh=False) as ledger:
        try:
            head = audit.checkpoint(_chain(ledger), ledger.db)
        except audit.ChainBroken as error:
            raise CommandError(f"TAMPERED: {error}") from None
    if args.json:
        print_json(vars(head))
    else:
        print(f"checkpoint at position {head.position} ({head.events} events): {head.chain_hash}")
        print("keep this hash somewhere the ledger's operators cannot write; "
              "`crawl-ledger audit verify --expect HASH` checks the log still leads to it")
    return 0


def run_verify(args: argparse.Namespace) -> int:
    with open_ledger(fresh=False) as ledger:
        verdict = audit.verify(_chain(ledger), ledger.db, args.expect)
        derived = derived_problems(ledger) if verdict.ok else []
    ok = verdict.ok and not derived
    if args.json:
        print_json({"ok": ok, "events": verdict.checked, "head": vars(verdict.head),
                    "message": verdict.message, "derived": derived})
    elif verdict.ok:
        print(f"verified: {verdict.checked} events, head {verdict.head.chain_hash} "
              f"at position {verdict.head.position}")
        for line in derived:
            print(f"TAMPERED (derived data; `crawl-ledger audit repair` rebuilds it): {line}")
    else:
        print(f"TAMPERED: {verdict.message}")
        print("nothing was changed; derived data is not checked against a log that does not verify")
    return 0 if ok else 1


def run_repair(args: argparse.Namespace) -> int:
    from runtime.admin.integrity import check_snapshots, drop_snapshots

    with open_ledger(fresh=False) as ledger:
        verdict = audit.verify(_chain(ledger), ledger.db)
        if not verdict.ok:
            raise CommandError(f"TAMPERED: {verdict.message}; nothing repaired (derived data is "
                               "rebuilt only from a log that verifies)")
        bad = check_snapshots(ledger)
        drop_snapshots(ledger, bad)
        repaired = [f"{b.describe()}; dropped (loads replay the events)" for b in bad]
        repaired += [f"dataset file {line}; rebuilt from the log" for line in _rebuild_datasets(ledger)]
    if args.json:
        print_json({"ok": True, "events": verdict.checked, "repaired": repaired})
    else:
        for line in repaired:
            print(f"repaired: {line}")
        print(f"the log verifies ({verdict.checked} events); "
              + (f"{len(repaired)} repairs" if repaired else "derived data already matched it"))
    return 0


def _chain(ledger: Ledger) -> audit.StoredChain:
    return audit.StoredChain(ledger.backend, ledger.app.recorder)


def derived_problems(ledger: Ledger) -> list[str]:
    """The data derived from the log (every aggregate snapshot, the Parquet datasets) that
    is not what the log says, one line each; changes nothing."""
    from projections.datasets import DatasetWriter
    from runtime.admin.integrity import check_snapshots

    problems = [bad.describe() for bad in check_snapshots(ledger)]
    writer = DatasetWriter(ledger.data_dir, ledger.source, ledger.tables.dataset_manifests)
    return problems + [f"dataset file {line}" for line in writer.integrity_problems()]


def _rebuild_datasets(ledger: Ledger) -> list[str]:
    """Rebuild the Parquet datasets from the log if they differ from it (under the
    writer's lock); what was found."""
    from projections.datasets import DatasetWriter

    return DatasetWriter(ledger.data_dir, ledger.source, ledger.tables.dataset_manifests).repair()


def run_verify_file(args: argparse.Namespace) -> int:
    """The hash chain over an exported log, without the database: an auditor's own copy."""
    from domain.errors import InvalidInput
    from eventstore.chain import GENESIS, next_link
    from runtime.admin.export_file import chain_record, check_envelope, parse_line

    path = Path(args.file)
    if not path.is_file():
        raise CommandError(f"{args.file}: no such file")
    chain, events, position, edited = GENESIS, 0, 0, ""
    with path.open("rb") as lines:
        for number, raw in enumerate(lines, 1):
            try:
                line = parse_line(raw)
                record = chain_record(line)
            except InvalidInput as error:
                raise CommandError(f"{args.file}:{number}: not an export line ({error})") from None
            if record[0] <= position:
                raise CommandError(f"{args.file}:{number}: position {record[0]} is out of order "
                                   "(a whole-log export is in log order)")
            try:
                check_envelope(line, (record[0], UUID(line["stream_id"]), *record[2:]))
            except InvalidInput as error:
                edited = edited or f"line {number}: {error}"
            chain, events, position = next_link(chain, *record), events + 1, record[0]
    head = chain.hex()
    ok = not edited and (args.expect is None or args.expect == head)
    if args.json:
        print_json({"ok": ok, "events": events, "position": position, "chain_hash": head,
                    "edited": edited})
    elif edited:
        print(f"MISMATCH: {edited}")
    elif ok:
        print(f"chain over {events} events, head position {position}: {head}"
              + (" (matches --expect)" if args.expect else ""))
    else:
        print(f"MISMATCH: the file's chain ends in {head}, not {args.expect}")
    return 0 if ok else 1
