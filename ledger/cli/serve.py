"""`crawl-ledger serve` (the HTTP API) and `crawl-ledger tokens create|list|revoke`."""

from __future__ import annotations

import argparse
import ipaddress
import socket
from contextlib import closing
from typing import Any

from ledger.cli.arguments import number
from ledger.cli.context import open_ledger, utcnow
from ledger.cli.errors import CommandError
from ledger.cli.output import print_json, print_table

__all__ = ["register"]


def register(sub: Any) -> None:
    serve = sub.add_parser("serve", help="the operations HTTP API (OpenAPI at /openapi.json)")
    serve.add_argument("--host", default="127.0.0.1",
                       help="address to bind (default 127.0.0.1; another needs a token first)")
    serve.add_argument("--port", type=number(0, 65535, integer=True), default=8080)
    serve.add_argument("--lease-ttl", type=number(1, 86400), default=None,
                       help="seconds a bot's lease lasts without a heartbeat (default: the "
                            "runner's)")
    serve.add_argument("--max-import-mb", type=number(1, 1 << 20), default=None,
                       help="largest export POST /api/v1/events/import takes, in MiB "
                            "(default 1024)")
    serve.add_argument("--head-timeout", type=number(0.1, 3600), default=10.0,
                       help="seconds a connection has to send a whole request head; a "
                            "slower one is closed (default 10)")
    serve.add_argument("--body-timeout", type=number(0.1, 3600), default=30.0,
                       help="seconds a request body may stall before it is answered 408 "
                            "(default 30)")
    serve.add_argument("--keep-alive", type=number(1, 3600, integer=True), default=5,
                       help="seconds an idle keep-alive connection stays open (default 5)")
    serve.add_argument("--max-connections", type=number(1, 100_000, integer=True),
                       default=200, help="connections and requests in progress; the next "
                                         "request is answered 503 (default 200)")
    serve.add_argument("--access-log", metavar="PATH", default=None,
                       help="one JSON line per request, to this file (default "
                            "<data dir>/access.log); '-' into the server's own log; 'off'")
    serve.set_defaults(handler=run_serve)
    tokens = sub.add_parser("tokens", help="API tokens: create (shown once), list, revoke")
    actions = tokens.add_subparsers(dest="action", required=True, metavar="ACTION")
    create = actions.add_parser("create", help="create a token; it is printed once")
    create.add_argument("--scope", required=True, choices=("read", "operate", "bot", "admin"))
    create.add_argument("--name", default="")
    create.add_argument("--json", action="store_true")
    create.set_defaults(handler=create_token)
    lst = actions.add_parser("list", help="list tokens (never the tokens themselves)")
    lst.add_argument("--json", action="store_true")
    lst.set_defaults(handler=list_tokens)
    revoke = actions.add_parser("revoke", help="revoke a token by its id")
    revoke.add_argument("token_id")
    revoke.set_defaults(handler=revoke_token)
    register_bot(sub)


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def run_serve(args: argparse.Namespace) -> int:
    from functools import partial

    from api.access_log import AccessLog
    from api.app import create_app
    from api.auth import TokenStore
    from api.http_server import ServerLimits, run_server
    from ledger.bootstrap import notifier_for
    from ledger.crawlers import page_reader
    from ledger.host.in_use import using
    from ledger.host.logs import access_logger
    from ledger.settings import Settings
    from runtime.clock import SystemClock
    from runtime.defaults import DEFAULTS
    from runtime.remote import BotPages
    from workers.fetching.addresses import AddressGuard

    settings = Settings.from_env()
    ttl = args.lease_ttl or DEFAULTS.lease_ttl
    with using(settings.data_dir), open_ledger(create=True) as ledger, closing(
            BotPages(ledger, page_reader(settings), SystemClock(), forget_after=4 * ttl)
    ) as bot_pages:
        tokens = TokenStore(ledger.tables.tokens)
        if not _loopback(args.host) and not tokens.any_live():
            raise CommandError(f"refusing to serve on {args.host} with no API token: create one "
                               "first (crawl-ledger tokens create --scope admin)")
        # the app runs its projector while it serves: the read models stay current
        app = create_app(ledger, tokens, SystemClock(), _probes(ledger),
                         lease_ttl=args.lease_ttl or DEFAULTS.lease_ttl,
                         import_max_bytes=(int(args.max_import_mb * (1 << 20))
                                           if args.max_import_mb else DEFAULTS.import_max_bytes),
                         alert_sender=partial(notifier_for, settings),
                         proxy_guard=AddressGuard(settings.allow_networks),
                         body_timeout=args.body_timeout, bot_pages=bot_pages)
        access = access_logger(args.access_log or str(settings.data_dir / "access.log"))
        served = AccessLog(app, access) if access is not None else app
        base = f"http://{args.host}:{args.port}"
        print(f"crawl-ledger on {base}: the dashboard at {base}/ (sign in with a token), the "
              f"API under {base}/api/v1 (OpenAPI: {base}/openapi.json)"
              + (f"; access log: {access.handlers[0].baseFilename}"  # type: ignore[attr-defined]
                 if access is not None and access.handlers else ""), flush=True)
        # log_config=None: uvicorn's lines go through our structured logging (ledger/host/logs.py)
        limits = ServerLimits(args.head_timeout, args.keep_alive, args.max_connections)
        run_server(served, args.host, args.port, limits, log_config=None)
    return 0


def _probes(ledger: Any) -> Any:
    """With a broker configured, `/readyz` checks it and `/metrics` shows the relay's lag."""
    from api.app import Probes
    from ledger.settings import Settings

    settings = Settings.from_env()
    if settings.broker is None:
        return Probes()
    servers = settings.broker_servers

    positions = ledger.tables.relay_positions()

    def broker() -> str | None:
        host, _, port = servers[0].rpartition(":")
        try:
            socket.create_connection((host.strip("[]"), int(port)), timeout=2).close()
        except OSError as error:
            return f"{servers[0]}: {error.strerror or type(error).__name__}"
        return None

    return Probes(relay_position=lambda: positions.load().position, broker=broker)


def _tokens(ledger: Any) -> Any:
    from api.auth import TokenStore  # FastAPI's package is only imported by these commands

    return TokenStore(ledger.tables.tokens)


def create_token(args: argparse.Namespace) -> int:
    with open_ledger(fresh=False, create=True) as ledger:
        secret, token = _tokens(ledger).create(args.scope, args.name, utcnow())
    if args.json:
        print_json({"id": token.token_id, "name": token.name, "scope": token.scope,
                    "token": secret})
    else:
        print(f"token {token.token_id} ({token.scope}): {secret}")
        print("it is shown this once; only its hash is kept")
    return 0


def list_tokens(args: argparse.Namespace) -> int:
    with open_ledger(fresh=False) as ledger:
        found = _tokens(ledger).list()
    if args.json:
        print_json([vars(t) for t in found])
        return 0
    print_table("tokens", ["id", "name", "scope", "created", "revoked"],
                ([t.token_id, t.name, t.scope, t.created_at[:19], (t.revoked_at or "")[:19]]
                 for t in found))
    return 0


def revoke_token(args: argparse.Namespace) -> int:
    with open_ledger(fresh=False) as ledger:
        if not _tokens(ledger).revoke(args.token_id, utcnow()):
            raise CommandError(f"no live token {args.token_id}")
    print(f"token {args.token_id} revoked")
    return 0


def register_bot(sub: Any) -> None:
    bot = sub.add_parser("bot", help="a crawl worker that reaches only the HTTP API")
    bot.add_argument("--server", required=True, help="the API's base URL, e.g. https://ops:8080")
    bot.add_argument("--token", help="a bot-scope token (default: $LEDGER_BOT_TOKEN)")
    bot.add_argument("--name", default="", help="the worker's name (default: host:pid)")
    bot.add_argument("--concurrency", type=number(1, 64, integer=True), default=4)
    bot.add_argument("--until-idle", action="store_true", help="stop when no job is due")
    bot.set_defaults(handler=run_bot_command)


def run_bot_command(args: argparse.Namespace) -> int:
    import os
    import socket

    from ledger.drivers.bot_client import run_bot
    from ledger.drivers.embedded import run_loop
    from ledger.settings import Settings
    from workers.fetching.addresses import AddressGuard

    token = args.token or os.environ.get("LEDGER_BOT_TOKEN")
    if not token:
        raise CommandError("a bot token is needed: --token or LEDGER_BOT_TOKEN")
    settings = Settings.from_env()
    name = args.name or f"{socket.gethostname()}:{os.getpid()}"
    stats = run_loop(run_bot(args.server, token, name, args.concurrency,
                             AddressGuard(settings.allow_networks), settings.user_agent,
                             args.until_idle))
    print(f"bot {name}: {stats.leased} leased, {stats.submitted} submitted "
          f"({stats.failed} failures), {stats.lost} leases lost")
    return 0
