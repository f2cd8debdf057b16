"""`crawl-ledger proxies add|list|disable|enable` and `stores set-proxy`: the egress pool."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ledger.cli.context import open_ledger, utcnow
from ledger.cli.errors import CommandError
from ledger.cli.output import print_json, print_table
from ledger.drivers.embedded import run_loop
from ledger.settings import Settings
from runtime.commands import DisableProxy, EnableProxy, cli_origin
from runtime.proxy_pool import add_proxy, proxy_rows
from workers.fetching.addresses import AddressGuard


def register(sub: Any) -> None:
    proxies = sub.add_parser("proxies", help="the egress proxy pool stores may crawl through")
    actions = proxies.add_subparsers(dest="action", required=True, metavar="ACTION")
    add = actions.add_parser("add", help="add an http(s) proxy; its credentials are never shown")
    add.add_argument("url", nargs="?", help="http://[user:password@]host:port")
    add.add_argument("--url-file", type=Path,
                     help="read the URL from a file (keeps a password out of the process list)")
    add.add_argument("--region", help="stores with --region R crawl through proxies of R")
    add.add_argument("--json", action="store_true")
    add.set_defaults(handler=add_cmd)
    lst = actions.add_parser("list", help="proxies, their state and health counters")
    lst.add_argument("--json", action="store_true")
    lst.set_defaults(handler=list_cmd)
    disable = actions.add_parser("disable", help="stop using a proxy")
    disable.add_argument("proxy_id")
    disable.add_argument("--reason", default="")
    disable.set_defaults(handler=disable_cmd)
    enable = actions.add_parser("enable", help="use a disabled proxy again")
    enable.add_argument("proxy_id")
    enable.set_defaults(handler=enable_cmd)


def register_store_command(actions: Any) -> None:
    """`stores set-proxy STORE_ID --pool|--region R|--none` (added by `ledger.cli.stores`)."""
    proxy = actions.add_parser("set-proxy", help="crawl a store through the proxy pool, or not")
    proxy.add_argument("store_id")
    choice = proxy.add_mutually_exclusive_group(required=True)
    choice.add_argument("--pool", action="store_true", help="any active proxy")
    choice.add_argument("--region", help="an active proxy of this region")
    choice.add_argument("--none", action="store_true", help="connect directly (the default)")
    proxy.set_defaults(handler=set_store_proxy)


def _url(args: argparse.Namespace) -> str:
    if (args.url is None) == (args.url_file is None):
        raise CommandError("give the proxy URL or --url-file, one of them")
    if args.url_file is None:
        return str(args.url)
    try:
        return str(args.url_file.read_text()).strip()
    except OSError as error:
        raise CommandError(f"cannot read --url-file: {error.strerror}") from None


def add_cmd(args: argparse.Namespace) -> int:
    url, settings = _url(args), Settings.from_env()
    with open_ledger(fresh=False, create=True) as ledger:
        guard = AddressGuard(settings.allow_networks)
        proxy_id = run_loop(add_proxy(ledger, ledger.tables.proxies, guard, url, args.region,
                                      utcnow()))
        address = ledger.app.get_proxy(proxy_id).address
    if args.json:
        print_json({"id": str(proxy_id), "address": address})
    else:
        print(f"proxy {proxy_id} added: {address}")
    return 0


def list_cmd(args: argparse.Namespace) -> int:
    with open_ledger() as ledger:
        rows = proxy_rows(ledger, ledger.tables.proxies)
    if args.json:
        print_json([dict(r, id=r["proxy_id"]) for r in rows])
        return 0
    print_table("egress proxies", ["id", "address", "region", "state", "ok", "failed",
                                   "in a row", "latency ms"],
                ([r["proxy_id"], r["address"], r["region"] or "", _state(r), r["successes"],
                  r["failures"], r["consecutive_failures"], r["latency_ms"] or ""]
                 for r in rows))
    return 0


def _state(row: dict[str, Any]) -> str:
    if not row["enabled"]:
        return f"disabled ({row['disabled_reason']})"
    return "active" if row["healthy"] else f"out until re-test at {row['retest_at']}"


def disable_cmd(args: argparse.Namespace) -> int:
    with open_ledger(fresh=False) as ledger:
        ledger.commands.send(DisableProxy(args.proxy_id, cli_origin(args.reason)), utcnow())
    print(f"proxy {args.proxy_id} disabled")
    return 0


def enable_cmd(args: argparse.Namespace) -> int:
    with open_ledger(fresh=False) as ledger:
        ledger.commands.send(EnableProxy(args.proxy_id, cli_origin()), utcnow())
    print(f"proxy {args.proxy_id} enabled")
    return 0


def set_store_proxy(args: argparse.Namespace) -> int:
    egress = None if args.none else "pool" if args.pool else f"region:{args.region}"
    with open_ledger(fresh=False) as ledger:
        ledger.app.set_store_egress(args.store_id, egress, utcnow())
    print(f"store {args.store_id} egress: {egress or 'direct'}")
    return 0


__all__ = ["register", "register_store_command"]
