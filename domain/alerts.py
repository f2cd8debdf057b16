"""Alerts as commands (a mixin of `CrawlLedger`): subscriptions and their deliveries.

`trigger_delivery` creates a delivery once per (subscription, triggering event):
the stream id is derived from both, so a second writer's save conflicts and
records nothing. `begin_attempt` records the intent to send before anything is
sent; `record_delivered` / `record_delivery_failure` record the outcome.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypeVar
from uuid import UUID

from eventsourcing.domain import Aggregate

from domain import ids
from domain.alert import Subscription
from domain.delivery import Delivery
from domain.errors import Conflict, NotFound
from domain.persistence import as_uuid
from domain.timeutil import command, utc
from domain.values import Origin

__all__ = ["Alerts"]

A = TypeVar("A", bound=Aggregate)


class Alerts:
    if TYPE_CHECKING:  # provided by the application class this is mixed into
        def find(self, cls: type[A], aggregate_id: UUID) -> A | None: ...

        def _save(self, *aggregates: Aggregate | None) -> Sequence[int]: ...

    # subscriptions ----------------------------------------------------------
    @staticmethod
    def check_subscription(*, name: str, target_kind: str, target: str,
                           triggers: list[dict[str, Any]], channel_kind: str, channel: str,
                           now: datetime) -> None:
        """Raise `InvalidInput` for what `create_subscription` would refuse; records nothing."""
        Subscription.create(name=name, target_kind=target_kind, target=target,
                            triggers=triggers, channel_kind=channel_kind, channel=channel,
                            at=utc(now)).collect_events()

    @command
    def create_subscription(self, *, name: str, target_kind: str, target: str,
                            triggers: list[dict[str, Any]], channel_kind: str, channel: str,
                            now: datetime, origin: Origin | None = None) -> UUID:
        """A new subscription; `channel` is the channel's display form (no credentials)."""
        subscription = Subscription.create(
            name=name, target_kind=target_kind, target=target, triggers=triggers,
            channel_kind=channel_kind, channel=channel, at=utc(now), origin=origin)
        self._save(subscription)
        return subscription.id

    def get_subscription(self, subscription_id: UUID | str) -> Subscription:
        found = self.find(Subscription, as_uuid(subscription_id, "subscription"))
        if found is None:
            raise NotFound(f"unknown subscription id {subscription_id}")
        return found

    @command
    def remove_subscription(self, subscription_id: UUID | str, now: datetime,
                            origin: Origin | None = None) -> None:
        subscription = self.get_subscription(subscription_id)
        subscription.remove(utc(now), origin)
        self._save(subscription)

    @command
    def record_alert_test(self, subscription_id: UUID | str, delivered: bool,
                          status: int | None, error: str, now: datetime,
                          origin: Origin | None = None) -> None:
        """Record a test send's outcome and who asked for it."""
        subscription = self.get_subscription(subscription_id)
        subscription.tested(utc(now), delivered, status, error, origin)
        self._save(subscription)

    # deliveries -------------------------------------------------------------
    def get_delivery(self, delivery_id: UUID | str) -> Delivery:
        found = self.find(Delivery, as_uuid(delivery_id, "delivery"))
        if found is None:
            raise NotFound(f"unknown delivery id {delivery_id}")
        return found

    @command
    def trigger_delivery(self, *, subscription_id: str, event_id: str, event_type: str,
                         product_id: str, trigger: dict[str, Any], body: str,
                         now: datetime) -> UUID | None:
        """The delivery's id, or None when this event already has one for the subscription."""
        if self.find(Delivery, ids.delivery_id(subscription_id, event_id)) is not None:
            return None
        delivery = Delivery(subscription_id=subscription_id, event_id=event_id,
                            event_type=event_type, product_id=product_id, trigger=trigger,
                            body=body, at=utc(now))
        try:
            self._save(delivery)
        except Conflict:
            return None  # another handler created it first
        return delivery.id

    @command
    def begin_attempt(self, delivery_id: UUID | str, until: datetime, now: datetime,
                      orphaned: bool = False) -> tuple[Delivery, int] | None:
        """Record `Attempted` when the delivery is due: (delivery, attempt number); None
        when it is not due, finished, or another sender started it first."""
        delivery = self.find(Delivery, as_uuid(delivery_id, "delivery"))
        if delivery is None or not delivery.due(utc(now), orphaned):
            return None
        attempt = delivery.attempt(utc(until), utc(now))
        try:
            self._save(delivery)
        except Conflict:
            return None
        return delivery, attempt

    @command
    def record_delivered(self, delivery_id: UUID | str, attempt: int, status: int | None,
                         now: datetime) -> None:
        delivery = self.get_delivery(delivery_id)
        delivery.succeed(attempt, status, utc(now))
        self._save(delivery)

    @command
    def record_delivery_failure(self, delivery_id: UUID | str, attempt: int, error: str,
                                status: int | None, retry_at: datetime | None,
                                now: datetime) -> None:
        """A failed attempt; `retry_at=None` makes the delivery dead."""
        delivery = self.get_delivery(delivery_id)
        delivery.fail(attempt, error, status, None if retry_at is None else utc(retry_at),
                      utc(now))
        self._save(delivery)
