"""`crawl-ledger schedule distribution|rebalance`: time-slot load spreading.

    crawl-ledger schedule distribution [--slot 15m] [--hours 24] [--json]
    crawl-ledger schedule rebalance (--preview | --apply) [--slot 15m] [--hours 24] [--json]

`distribution` shows the recurring jobs' runs per slot over the horizon and the spread
score (busiest slot / mean); `rebalance` moves next runs (`runtime/slots.py`) and shows
the score before and after; `--apply` records each move as a `Rescheduled` event with
its reason.
"""

from __future__ import annotations

import argparse
from typing import Any

from ledger.cli.arguments import number
from ledger.cli.context import open_ledger, parse_duration, utcnow
from ledger.cli.errors import CommandError
from ledger.cli.output import print_json

__all__ = ["register"]


def register(sub: Any) -> None:
    schedule = sub.add_parser("schedule", help="time-slot load spreading of recurring jobs")
    actions = schedule.add_subparsers(dest="action", required=True, metavar="ACTION")
    shown = actions.add_parser("distribution", help="runs per time slot and the spread score")
    moved = actions.add_parser("rebalance", help="move next runs to flatten the load")
    mode = moved.add_mutually_exclusive_group(required=True)
    mode.add_argument("--preview", action="store_true", help="show the moves, record nothing")
    mode.add_argument("--apply", action="store_true", help="record the moves")
    for parser in (shown, moved):
        parser.add_argument("--slot", default="15m", help="slot length (default 15m)")
        parser.add_argument("--hours", type=number(1, 720, integer=True), default=24,
                            help="horizon in hours (default 24)")
        parser.add_argument("--json", action="store_true")
    shown.set_defaults(handler=show_distribution)
    moved.set_defaults(handler=run_rebalance)


def _slot(args: argparse.Namespace) -> int:
    slot = parse_duration(args.slot)
    if not 60 <= slot <= 86400:
        raise CommandError(f"--slot must be 1m..1d, not {args.slot}")
    if slot > args.hours * 3600:
        raise CommandError("--slot must not be longer than the horizon (--hours)")
    return slot


def show_distribution(args: argparse.Namespace) -> int:
    from runtime.slots import distribution, planned_jobs

    slot = _slot(args)
    with open_ledger() as ledger:  # caught up: the distribution reads the read models
        shown = distribution(planned_jobs(ledger), utcnow(), slot, args.hours * 3600)
    if args.json:
        print_json({"slot_seconds": slot, "start": shown.start.isoformat(),
                    "counts": shown.counts, "score": shown.score})
        return 0
    top = max(shown.counts) or 1
    for index, count in enumerate(shown.counts):
        if count:
            bar = "#" * max(1, round(40 * count / top))
            print(f"{shown.slot_start(index):%Y-%m-%d %H:%M}  {count:5d}  {bar}")
    print(f"{sum(shown.counts)} runs in {len(shown.counts)} slots of {args.slot}; "
          f"spread score {shown.score} (busiest slot / mean; 1.0 is flat)")
    return 0


def run_rebalance(args: argparse.Namespace) -> int:
    from runtime.commands import cli_origin
    from runtime.slots import rebalance

    slot = _slot(args)
    with open_ledger() as ledger:  # caught up: the plan reads the read models
        moves, before, after = rebalance(ledger, utcnow(), args.apply, slot, args.hours * 3600,
                                         cli_origin())
    if args.json:
        print_json({"applied": bool(args.apply), "score_before": before.score,
                    "score_after": after.score,
                    "moves": [{"job_id": m.job_id, "before": m.before.isoformat(),
                               "after": m.after.isoformat(), "reason": m.reason}
                              for m in moves]})
        return 0
    for move in moves[:50]:
        print(f"{move.job_id}  {move.before:%Y-%m-%d %H:%M} -> {move.after:%Y-%m-%d %H:%M}")
    if len(moves) > 50:
        print(f"… and {len(moves) - 50} more")
    verb = "moved" if args.apply else "would move"
    print(f"{verb} {len(moves)} jobs; spread score {before.score} before, {after.score} after")
    return 0
