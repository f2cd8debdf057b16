"""`crawl-ledger simulate`: serve fake stores on loopback until Ctrl-C."""

from __future__ import annotations

import argparse
import asyncio
from typing import Any

from ledger.cli.arguments import number
from ledger.cli.errors import CommandError


def register(sub: Any) -> None:
    parser = sub.add_parser(
        "simulate",
        help="serve deterministic fake stores over HTTP on 127.0.0.1",
        description="Serve N fake stores (every supported platform), a store locator, "
        "link feeds and the ground truth (/__sim/truth) on loopback.",
    )
    parser.add_argument("--port", type=number(0, 65535, integer=True), default=8900,
                        help="control port (locator, feeds, /__sim); stores take the next free "
                        "ports; 0 = ephemeral ports for all (default 8900)")
    parser.add_argument("--stores", type=number(1, 1000, integer=True), default=5, help="number of stores (default 5)")
    parser.add_argument("--seed", type=number(0, 2147483647, integer=True), default=0, help="catalog seed (default 0)")
    parser.add_argument("--fault-rate", type=number(0, 1), default=0.0,
                        help="probability of a fault per store and epoch (default 0)")
    parser.set_defaults(handler=run_simulate)


def run_simulate(args: argparse.Namespace) -> int:
    if args.stores < 1:
        raise CommandError("--stores must be at least 1")
    if not 0.0 <= args.fault_rate <= 1.0:
        raise CommandError("--fault-rate must be between 0 and 1")
    if not 0 <= args.port <= 65535:
        raise CommandError("--port must be between 0 and 65535")
    try:
        asyncio.run(_serve(args))
    except KeyboardInterrupt:
        print("simulator stopped")
    return 0


async def _serve(args: argparse.Namespace) -> None:
    from simulator import Simulator

    sim = Simulator(stores=args.stores, seed=args.seed, fault_rate=args.fault_rate,
                    port=args.port)
    try:
        await sim.start()
    except OSError as error:
        raise CommandError(f"cannot listen on port {args.port}: {error.strerror}") from None
    try:
        _print_summary(sim)
        await asyncio.Event().wait()  # until Ctrl-C cancels the run
    finally:
        await sim.stop()


def _print_summary(sim: Any) -> None:
    from rich.console import Console
    from rich.table import Column, Table

    console = Console()
    console.print(f"control  {sim.control_url}")
    console.print(f"locator  {sim.locator_url}")
    console.print(f"truth    {sim.control_url}/__sim/truth   (POST /__sim/epoch to advance)")
    table = Table("store", "platform", "name", Column("url", overflow="fold"),
                  Column("entry url", overflow="fold"))
    for store in sim.stores:
        table.add_row(store.key, store.platform, store.spec.name, store.base_url, store.entry_url)
    console.print(table)
    console.print("Press Ctrl-C to stop.")
