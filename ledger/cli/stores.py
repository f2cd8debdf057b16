"""`crawl-ledger stores add|list|disable|enable|set-proxy`."""

from __future__ import annotations

import argparse
from typing import Any

from ledger.cli.arguments import number
from ledger.cli.context import open_ledger, utcnow
from ledger.cli.ids import resolve_store
from ledger.cli.output import print_json, print_table, shown_id
from ledger.cli.proxies import register_store_command
from runtime.commands import DisableStore, EnableStore, cli_origin


def register(sub: Any) -> None:
    stores = sub.add_parser("stores", help="register and list stores")
    actions = stores.add_subparsers(dest="action", required=True, metavar="ACTION")
    add = actions.add_parser("add", help="register a store")
    add.add_argument("name")
    add.add_argument("url", help="the store's base URL")
    add.add_argument("--platform", required=True,
                     help="dispensary, shopify, woocommerce, jsonld, microdata or generic")
    add.add_argument("--crawl-delay", type=number(0, 3600), help="seconds between requests (default 1)")
    add.add_argument("--max-concurrency", type=number(1, 64, integer=True), help="parallel requests (default 1)")
    add.add_argument("--region")
    add.add_argument("--timezone")
    add.add_argument("--ignore-robots", action="store_true",
                     help="do not obey robots.txt (only for sites you operate)")
    add.add_argument("--json", action="store_true")
    add.set_defaults(handler=add_store)
    disable = actions.add_parser("disable", help="stop crawling a store (its jobs are kept)")
    disable.add_argument("store_id")
    disable.add_argument("--reason", required=True)
    disable.set_defaults(handler=disable_store)
    enable = actions.add_parser("enable", help="crawl a disabled store again")
    enable.add_argument("store_id")
    enable.add_argument("--reason", help="why (recorded with the change)")
    enable.set_defaults(handler=enable_store)
    register_store_command(actions)
    lst = actions.add_parser("list", help="list stores")
    lst.add_argument("--json", action="store_true")
    lst.add_argument("--wide", action="store_true", help="whole ids, names and URLs")
    lst.set_defaults(handler=list_stores)


def add_store(args: argparse.Namespace) -> int:
    with open_ledger(fresh=False, create=True) as ledger:
        store_id = ledger.app.register_store(
            name=args.name, base_url=args.url, platform=args.platform, now=utcnow(),
            region=args.region, timezone=args.timezone, crawl_delay=args.crawl_delay,
            max_concurrency=args.max_concurrency,
            respect_robots=False if args.ignore_robots else None,
        )
    if args.json:
        print_json({"id": str(store_id)})
    else:
        print(f"registered store {store_id}")
    return 0


def disable_store(args: argparse.Namespace) -> int:
    with open_ledger(fresh=False) as ledger:
        store_id = resolve_store(ledger, args.store_id)
        ledger.commands.send(DisableStore(store_id, cli_origin(args.reason)), utcnow())
    print(f"store {store_id} disabled: its jobs are not dispatched or leased until enabled")
    return 0


def enable_store(args: argparse.Namespace) -> int:
    with open_ledger(fresh=False) as ledger:
        store_id = resolve_store(ledger, args.store_id)
        ledger.commands.send(EnableStore(store_id, cli_origin(args.reason)), utcnow())
    print(f"store {store_id} enabled")
    return 0


def list_stores(args: argparse.Namespace) -> int:
    with open_ledger() as ledger:
        rows = ledger.read.stores()
    if args.json:
        print_json([dict(r, id=r["store_id"]) for r in rows])
        return 0
    print_table("stores", ["id", "name", "platform", "delay", "enabled", "no price %",
                           "low conf %", "base url"],
                ([shown_id(r["store_id"], args.wide), r["name"], r["platform"], r["crawl_delay"],
                  "yes" if r["enabled"] else "no", percent(r.get("no_price_ratio")),
                  percent(r.get("low_confidence_ratio")), r["base_url"]] for r in rows),
                args.wide, flexible=("name", "base url"))
    return 0


def percent(ratio: float | None) -> str:
    """A share as a whole-number percentage ("-" before any crawl counted)."""
    return "-" if ratio is None else f"{ratio * 100:.0f}"
