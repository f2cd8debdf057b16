"""Alert channels beside the log, and adding, removing and testing subscriptions.

A subscription's events (`domain.alert.Subscription`) name its channel only by
kind and a display form without credentials, query or path secrets
(`workers.alert_delivery.channels.display_url`). The URL itself (an Apprise URL often holds a
bot token) and the webhook secret live in `alert_channels`, a side table in the
read-model database beside `api_tokens` (`eventstore.side_tables`): an immutable, exported,
published log is no place for a credential that may have to be rotated or
erased. Exporting and importing the log therefore carries subscriptions without
their channels; deleting the read-model database loses them too.

A channel is kept only once the sender's egress policy admits it
(`SenderPort.check`: an allowed kind whose every destination passes the address
guard); the sender checks again before each attempt.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol
from uuid import UUID

from domain.application import CrawlLedger
from domain.errors import InvalidInput
from domain.values import Origin
from runtime.tables import AlertChannelTable
from workers.alert_delivery.channels import Channel, display_url
from workers.alert_delivery.notify import SendOutcome

if TYPE_CHECKING:  # runtime.ledger builds the command dispatcher, which imports this module
    from runtime.ledger import Ledger

__all__ = ["AdmittedChannel", "Channel", "ChannelStore", "NewSubscription", "SenderPort", "add_subscription",
           "admit_channel", "forget_subscription", "record_subscription", "remove_subscription",
           "restore_channel", "sample_message", "shown_subscription", "channel_to_test"]

DELIVERY_HEADER = "X-Crawl-Ledger-Delivery"


class SenderPort(Protocol):
    async def check(self, channel: Channel) -> str:
        """The channel's display form once it may be used; `InvalidInput` otherwise."""
        ...

    async def send(self, channel: Channel, body: bytes,
                   headers: dict[str, str]) -> SendOutcome: ...


class ChannelStore:
    """Channel URLs and webhook secrets by subscription id (see the module docstring);
    also the alert handler's positions in the notification log. Kept in the side
    table `alert_channels` (`ledger.tables.alert_channels`)."""

    def __init__(self, table: AlertChannelTable) -> None:
        self.table = table

    def put(self, subscription_id: str, channel: Channel) -> None:
        self.table.put(subscription_id, channel.kind, channel.url, channel.secret)

    def get(self, subscription_id: str) -> Channel | None:
        found = self.table.get(subscription_id)
        return None if found is None else Channel(found.kind, found.url, found.secret)

    def delete(self, subscription_id: str) -> None:
        self.table.delete(subscription_id)

    def position(self, name: str) -> int:
        return self.table.position(name)

    def move(self, name: str, position: int) -> None:
        self.table.move(name, position)


@dataclass(frozen=True)
class AdmittedChannel:
    """A channel the sender's egress policy admitted (only `admit_channel` makes one),
    with its display form."""

    channel: Channel
    display: str


async def admit_channel(sender: SenderPort, channel: Channel) -> AdmittedChannel:
    """`channel` once its kind is allowed and every destination passes the address
    guard; `InvalidInput` (one line, no secret) otherwise."""
    return AdmittedChannel(channel, await sender.check(channel))


@dataclass(frozen=True)
class NewSubscription:
    name: str
    target_kind: str
    target: str
    triggers: list[dict[str, Any]]
    channel: AdmittedChannel


def add_subscription(ledger: Ledger, channels: ChannelStore, new: NewSubscription,
                     now: datetime, origin: Origin | None = None) -> UUID:
    """Validate everything first (a refusal records nothing), record the subscription,
    then keep its (admitted) channel; if that fails the subscription is removed again."""
    return record_subscription(ledger.app, channels, new, now, origin)


def record_subscription(app: CrawlLedger, channels: ChannelStore, new: NewSubscription,
                        now: datetime, origin: Origin | None = None) -> UUID:
    """`add_subscription` on the application itself (the command dispatcher's handler)."""
    channel = new.channel.channel
    fields: dict[str, Any] = {"name": new.name, "target_kind": new.target_kind,
                              "target": new.target, "triggers": new.triggers,
                              "channel_kind": channel.kind, "channel": new.channel.display}
    app.check_subscription(**fields, now=now)
    subscription_id = app.create_subscription(**fields, now=now, origin=origin)
    try:
        channels.put(str(subscription_id), channel)
    except Exception:
        app.remove_subscription(subscription_id, now, origin)
        raise
    return subscription_id


def restore_channel(ledger: Ledger, channels: ChannelStore, subscription_id: str,
                    admitted: AdmittedChannel) -> UUID:
    """Give a subscription its channel on this ledger (after `events import`, or a lost
    read-model database): only the channel its events name (kind and URL without
    credentials), so where alerts go never changes without an event."""
    subscription = ledger.app.get_subscription(subscription_id)
    if subscription.removed:
        raise InvalidInput(f"subscription {subscription.id} is removed")
    channel, shown = admitted.channel, admitted.display
    # display_url again: events recorded before path secrets were hidden show the whole path
    recorded = display_url(subscription.channel)
    if (channel.kind, shown) != (subscription.channel_kind, recorded):
        raise InvalidInput(f"subscription {subscription.id} sends to {subscription.channel_kind} "
                           f"{recorded}, not {channel.kind} {shown}: add a new "
                           "subscription for another channel")
    channels.put(str(subscription.id), channel)
    return subscription.id


def remove_subscription(ledger: Ledger, channels: ChannelStore, subscription_id: str,
                        now: datetime, origin: Origin | None = None) -> None:
    """Record the removal, then forget the channel's credentials."""
    forget_subscription(ledger.app, channels, subscription_id, now, origin)


def forget_subscription(app: CrawlLedger, channels: ChannelStore, subscription_id: str,
                        now: datetime, origin: Origin | None = None) -> None:
    """`remove_subscription` on the application itself (the command dispatcher's handler)."""
    app.remove_subscription(subscription_id, now, origin)
    channels.delete(str(app.get_subscription(subscription_id).id))


def channel_to_test(app: CrawlLedger, channels: ChannelStore,
                 subscription_id: str) -> tuple[UUID, Channel]:
    """The subscription's id and channel for a test send; `InvalidInput` when it is
    removed or has no channel on this ledger."""
    subscription = app.get_subscription(subscription_id)
    channel = channels.get(str(subscription.id))
    if subscription.removed or channel is None:
        raise InvalidInput(f"subscription {subscription.id} has no channel to test here")
    return subscription.id, channel


def shown_subscription(row: dict[str, Any]) -> dict[str, Any]:
    """A subscription's read-model row as answers show it: `id`, and the channel in
    today's display form (a subscription recorded before path secrets were hidden
    kept the whole path in its event)."""
    return {**row, "id": row["subscription_id"], "channel": display_url(row["channel"])}


def sample_message(subscription_id: str, now: datetime) -> tuple[bytes, dict[str, str]]:
    """A sample alert for `alerts test` (not recorded; its key is marked as a test)."""
    body = {"test": True, "subscription_id": subscription_id, "title": "crawl-ledger test alert",
            "message": "This is a test alert from crawl-ledger.", "sent_at": now.isoformat()}
    key = f"test:{subscription_id}:{now.isoformat()}"
    return json.dumps(body, sort_keys=True).encode(), {DELIVERY_HEADER: key}
