"""`crawl-ledger demo [--stores N] [--cycles N] [--seed S]`: the whole system in one command."""

from __future__ import annotations

import argparse
import time
from dataclasses import replace
from typing import Any

from rich.console import Console

from ledger.bootstrap import Ledger
from ledger.cli.arguments import number
from ledger.cli.errors import CommandError
from ledger.cli.output import print_table
from ledger.cli.progress import LiveStats
from ledger.drivers.demo import (
    DemoConfig,
    chart_path,
    demo_settings,
    run_distributed_demo,
    run_embedded_demo,
    start_ending_now,
)
from ledger.drivers.demo_report import all_envelopes, draw_chart, summarize
from ledger.host.in_use import DataDirInUse
from ledger.host.redact import redact_url
from ledger.settings import Settings


def register(sub: Any) -> None:
    demo = sub.add_parser("demo", help="crawl the built-in store simulator end to end")
    demo.add_argument("--stores", type=number(1, 50, integer=True), default=6)
    demo.add_argument("--cycles", type=number(1, 100, integer=True), default=8)
    demo.add_argument("--seed", type=number(0, 2147483647, integer=True), default=7)
    demo.add_argument("--fault-rate", type=number(0, 1), default=0.08,
                      help="share of store-epochs answering 429/500 (default 0.08)")
    demo.add_argument("--concurrency", type=number(1, 256, integer=True), default=8)
    demo.add_argument("--store", help="postgresql://… to run distributed (with --broker)")
    demo.add_argument("--broker", help="kafka://host:port: relay + Faust worker processes")
    demo.add_argument("-o", "--chart", help="PNG path (default <data dir>/demo/price-history.png)")
    demo.set_defaults(handler=run_demo)


def run_demo(args: argparse.Namespace) -> int:
    if not 1 <= args.stores <= 50 or not 1 <= args.cycles <= 200:
        raise CommandError("--stores must be 1..50 and --cycles 1..200")
    if not 0 <= args.fault_rate <= 1:
        raise CommandError("--fault-rate must be between 0 and 1")
    config = DemoConfig(stores=args.stores, cycles=args.cycles, seed=args.seed,
                        fault_rate=args.fault_rate, concurrency=args.concurrency)
    config = replace(config, start=start_ending_now(config))
    if bool(args.broker) != bool(args.store and args.store.startswith("postgres")):
        raise CommandError("the distributed demo needs both --store postgresql://… and --broker")
    try:
        settings = demo_settings(Settings.from_env(), config, args.store, args.broker)
    except DataDirInUse as refused:
        raise CommandError(f"{refused}; stop it before running the demo again") from None
    except FileExistsError as refused:  # someone else's dir: an operator error, not a crash
        raise CommandError(f"{refused}; not touching it (move it, or use another"
                           " LEDGER_DATA_DIR)") from None
    console = Console()
    started = time.monotonic()
    ledger = _run(settings, config, console)
    try:
        if not settings.broker:
            spread(ledger, config, console)
            ledger.catch_up()
        report(ledger, ledger_envelopes := list(all_envelopes(ledger)), args, console)
        elapsed = time.monotonic() - started
        store = f"LEDGER_STORE='{redact_url(settings.store)}' " if settings.is_postgres else ""
        console.print(f"{len(ledger_envelopes)} events in {elapsed:.1f}s. Explore it:  "
                      f"{store}LEDGER_DATA_DIR={settings.data_dir} crawl-ledger products list")
    finally:
        ledger.close()
    return 0


def spread(ledger: Ledger, config: DemoConfig, console: Console) -> None:
    """Rebalance the demo's recurring jobs over 15-minute slots (as of the simulated
    clock's end) and show the spread score before and after."""
    from runtime.slots import rebalance

    moves, before, after = rebalance(ledger, config.end, apply=True)
    console.print(f"schedule spread (busiest 15-min slot / mean over the next 24 h): "
                  f"{before.score} before rebalance, {after.score} after "
                  f"({len(moves)} next runs moved)", highlight=False)


def _run(settings: Settings, config: DemoConfig, console: Console) -> Ledger:
    cycle = [0]

    def on_cycle(c: int) -> None:
        cycle[0] = c
        if settings.broker:
            console.print(f"cycle {c + 1}/{config.cycles}: relay + Faust workers crawling …")

    if settings.broker:
        return run_distributed_demo(settings, config, on_cycle=on_cycle)
    with LiveStats("demo", console, extra=lambda: f"cycle {cycle[0] + 1}/{config.cycles}") as live:
        return run_embedded_demo(settings, config, on_change=live.update, on_cycle=on_cycle)


def report(ledger: Ledger, envelopes: list[Any], args: argparse.Namespace,
           console: Console) -> None:
    summary = summarize(envelopes)
    print_table("demo summary", ["", ""], summary.rows())
    path = chart_path(ledger.data_dir, args.chart)
    names = draw_chart(ledger, path)
    console.print(f"price-history chart of {', '.join(names)} -> {path}")
