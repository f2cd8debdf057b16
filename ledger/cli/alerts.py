"""`crawl-ledger alerts add|list|remove|test|deliveries`: price and stock alerts."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from ledger.bootstrap import notifier_for
from ledger.cli.context import open_ledger, utcnow
from ledger.cli.errors import CommandError
from ledger.cli.output import print_json, print_table, short
from ledger.drivers.embedded import run_loop
from ledger.settings import Settings
from runtime.alert_channels import (
    AdmittedChannel,
    ChannelStore,
    NewSubscription,
    admit_channel,
    restore_channel,
    sample_message,
    shown_subscription,
)
from runtime.commands import AddSubscription, RemoveSubscription, TestAlert, cli_origin
from workers.alert_delivery.notify import Channel, SendOutcome


def register(sub: Any) -> None:
    alerts = sub.add_parser("alerts", help="price and stock alerts: subscriptions, deliveries")
    actions = alerts.add_subparsers(dest="action", required=True, metavar="ACTION")
    add = actions.add_parser("add", help="subscribe a webhook or an Apprise URL to changes")
    target = add.add_mutually_exclusive_group(required=True)
    target.add_argument("--product", metavar="PRODUCT_ID")
    target.add_argument("--store", metavar="STORE_ID")
    target.add_argument("--search", metavar="TEXT",
                        help="products whose name, brand or category contain TEXT")
    add.add_argument("--drop", metavar="PERCENT", help="the price drops by at least PERCENT")
    add.add_argument("--below", metavar="PRICE", help="the price falls below PRICE")
    add.add_argument("--back-in-stock", action="store_true")
    add.add_argument("--out-of-stock", action="store_true")
    _channel_arguments(add)
    add.add_argument("--name", default="")
    add.add_argument("--json", action="store_true")
    add.set_defaults(handler=add_alert)
    restore = actions.add_parser(
        "set-channel", help="give a subscription its channel on this ledger (after an import): "
                            "the same channel its events name, with its credentials")
    restore.add_argument("subscription_id")
    _channel_arguments(restore)
    restore.set_defaults(handler=set_channel)
    lst = actions.add_parser("list", help="subscriptions (channels shown without credentials)")
    lst.add_argument("--all", action="store_true", help="removed ones too")
    lst.add_argument("--json", action="store_true")
    lst.set_defaults(handler=list_alerts)
    rm = actions.add_parser("remove", help="remove a subscription and forget its channel")
    rm.add_argument("subscription_id")
    rm.set_defaults(handler=remove_alert)
    test = actions.add_parser("test", help="send a test alert now (recorded nowhere)")
    test.add_argument("subscription_id")
    test.set_defaults(handler=test_alert)
    dels = actions.add_parser("deliveries", help="deliveries and their outcomes")
    dels.add_argument("--subscription", default=None)
    dels.add_argument("--state", choices=("pending", "attempting", "failed", "delivered", "dead"))
    dels.add_argument("--json", action="store_true")
    dels.set_defaults(handler=list_deliveries)


def _channel_arguments(parser: argparse.ArgumentParser) -> None:
    channel = parser.add_mutually_exclusive_group(required=True)
    channel.add_argument("--webhook", metavar="URL", help="POST signed JSON to URL")
    channel.add_argument("--apprise", metavar="URL",
                         help="an Apprise URL: json://, form://, xml://, slack://, discord://, "
                              "tgram://, ntfy://TOPIC or mailto:// (see docs/security.md)")
    parser.add_argument("--secret", help="the webhook's HMAC-SHA256 key (prefer --secret-file)")
    parser.add_argument("--secret-file", type=Path, help="read the webhook's key from a file")


def _triggers(args: argparse.Namespace) -> list[dict[str, Any]]:
    triggers: list[dict[str, Any]] = []
    if args.drop is not None:
        triggers.append({"kind": "price_drop", "value": args.drop})
    if args.below is not None:
        triggers.append({"kind": "price_below", "value": args.below})
    triggers += [{"kind": kind} for kind, wanted in (
        ("back_in_stock", args.back_in_stock), ("out_of_stock", args.out_of_stock)) if wanted]
    if not triggers:
        raise CommandError("give at least one trigger: --drop, --below, --back-in-stock "
                           "or --out-of-stock")
    return triggers


def _channel(args: argparse.Namespace) -> Channel:
    if args.secret is not None and args.secret_file is not None:
        raise CommandError("give --secret or --secret-file, not both")
    secret = args.secret
    if args.secret_file is not None:
        try:
            secret = args.secret_file.read_text().strip()
        except OSError as error:
            raise CommandError(f"cannot read --secret-file: {error.strerror}") from None
    if args.webhook is not None:
        return Channel("webhook", args.webhook, secret or None)
    return Channel("apprise", args.apprise, secret or None)


def _admitted(channel: Channel) -> AdmittedChannel:
    """The channel once the alert sender's egress policy admits it."""
    async def admit() -> AdmittedChannel:
        async with notifier_for(Settings.from_env()) as notifier:
            return await admit_channel(notifier, channel)
    return run_loop(admit())


def add_alert(args: argparse.Namespace) -> int:
    triggers, channel = _triggers(args), _admitted(_channel(args))
    kind, target = next((k, v) for k, v in (("product", args.product), ("store", args.store),
                                            ("search", args.search)) if v is not None)
    with open_ledger(fresh=False, create=True) as ledger:
        if kind == "product":
            target = str(ledger.app.get_product(target).id)
        elif kind == "store":
            target = str(ledger.app.get_store(target).id)
        made = ledger.commands.send(AddSubscription(
            NewSubscription(args.name, kind, target, triggers, channel), cli_origin()), utcnow())
    if args.json:
        print_json({"id": str(made)})
    else:
        print(f"subscription {made}")
    return 0


def _shown_triggers(triggers: list[dict[str, Any]]) -> str:
    return ", ".join(t["kind"] + (f" {t['value']}" if t.get("value") else "") for t in triggers)


def list_alerts(args: argparse.Namespace) -> int:
    with open_ledger() as ledger:
        rows = [shown_subscription(r)
                for r in ledger.alerts.subscriptions(include_removed=args.all)]
    if args.json:
        print_json(rows)
        return 0
    print_table("alert subscriptions", ["id", "name", "target", "triggers", "channel", "removed"],
                ([r["subscription_id"], r["name"], f"{r['target_kind']} {short(r['target'], 24)}",
                  _shown_triggers(r["triggers"]), r["channel"], r["removed_at"] or ""]
                 for r in rows))
    return 0


def set_channel(args: argparse.Namespace) -> int:
    channel = _admitted(_channel(args))
    with open_ledger(fresh=False) as ledger:
        restored = restore_channel(ledger, ChannelStore(ledger.tables.alert_channels), args.subscription_id, channel)
    print(f"subscription {restored}: channel set on this ledger")
    return 0


def remove_alert(args: argparse.Namespace) -> int:
    with open_ledger(fresh=False) as ledger:
        ledger.commands.send(RemoveSubscription(args.subscription_id, cli_origin()), utcnow())
    print(f"subscription {args.subscription_id} removed")
    return 0


def test_alert(args: argparse.Namespace) -> int:
    settings = Settings.from_env()
    with open_ledger(fresh=False) as ledger:
        subscription = ledger.app.get_subscription(args.subscription_id)
        if subscription.removed:
            raise CommandError(f"subscription {subscription.id} is removed")
        channel = ChannelStore(ledger.tables.alert_channels).get(str(subscription.id))
    if channel is None:
        raise CommandError(f"subscription {subscription.id} has no channel on this ledger")
    body, headers = sample_message(str(subscription.id), utcnow())
    outcome = run_loop(_send(settings, channel, body, headers))
    with open_ledger(fresh=False) as ledger:  # the outcome, and who asked
        ledger.commands.send(TestAlert(subscription.id, outcome.ok, outcome.status,
                                       outcome.error, cli_origin()), utcnow())
    if not outcome.ok:
        print(f"crawl-ledger: test alert not delivered: {outcome.error}", file=sys.stderr)
        return 1
    print(f"test alert delivered to {subscription.channel}"
          + (f" (HTTP {outcome.status})" if outcome.status else ""))
    return 0


async def _send(settings: Settings, channel: Channel, body: bytes,
                headers: dict[str, str]) -> SendOutcome:
    async with notifier_for(settings) as notifier:
        return await notifier.send(channel, body, headers)


def list_deliveries(args: argparse.Namespace) -> int:
    with open_ledger() as ledger:
        rows = ledger.alerts.deliveries(args.subscription, args.state)
    if args.json:
        print_json([dict(r, id=r["delivery_id"]) for r in rows])
        return 0
    print_table("alert deliveries", ["id", "subscription", "event", "state", "attempts", "error"],
                ([r["delivery_id"], short(r["subscription_id"]), r["event_type"], r["state"],
                  r["attempts"], r["last_error"] or ""] for r in rows))
    return 0


__all__ = ["register"]
