"""The alert handler every driver shares: product events -> deliveries -> sent alerts.

`AlertStep.record(envelopes)` matches each `Product.PriceChanged`,
`Product.BackInStock` and `Product.WentOutOfStock` against the subscriptions and
records one `Delivery` per (subscription, triggering event id): the delivery's
id is derived from both, so reading the same event again (a second handler, a
restart, Kafka's redelivery) records nothing. `deliver(ids)` / `deliver_due()`
then make the attempts:

1. `Delivery.Attempted` is recorded first (intent before sending);
2. the exact body stored with the delivery is sent, with the delivery id as the
   idempotency key (`X-Crawl-Ledger-Delivery`), the same on every attempt;
3. `Delivered`, or `Failed` with the next attempt's time (exponential backoff,
   `base * 2^(attempt-1)` capped), or `Failed` + `Dead` after `max_attempts` or a
   failure that cannot get better (4xx, a refused address).

A process killed between 1 and 3 leaves an attempt whose outcome is unknown; it is
due again once `attempt_timeout` passed, or at once when the embedded runner
restarts (`orphaned`: it is the only one). The receiver may then see the key
twice: exactly-once *to the receiver* relies on it deduplicating on that key.

The embedded runner calls `run_once` (reads the notification log from the
handler's own position); the Faust agent calls `record` + `deliver` for each
batch of the products topic and `deliver_due` on a timer.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any
from uuid import UUID

from domain.alert import TRIGGER_EVENTS, ProductFacts, Subscription, effective_prices
from domain.envelope import Envelope
from domain.ids import delivery_id
from domain.product import Product
from domain.timeutil import iso
from runtime.alert_channels import DELIVERY_HEADER, ChannelStore, SenderPort
from runtime.clock import Clock
from runtime.db_thread import DbThread
from runtime.ledger import Ledger
from workers.alert_delivery.notify import Channel, SendOutcome

__all__ = ["AlertBatch", "AlertOptions", "AlertStep", "alert_body", "match"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class AlertOptions:
    max_attempts: int = 6
    backoff_base: float = 30.0
    backoff_cap: float = 3600.0
    #: an attempt in flight longer than this is presumed lost (its sender died)
    attempt_timeout: float = 120.0
    batch: int = 500

    def retry_at(self, attempt: int, now: datetime) -> datetime:
        delay = min(self.backoff_base * 2 ** (attempt - 1), self.backoff_cap)
        return now + timedelta(seconds=delay)


@dataclass
class AlertBatch:
    """What alert steps did."""

    triggered: int = 0
    delivered: int = 0
    failed: int = 0
    dead: int = 0
    errors: list[str] = field(default_factory=list)

    @property
    def recorded(self) -> int:
        return self.triggered + self.delivered + self.failed

    def add(self, other: AlertBatch) -> None:
        self.triggered += other.triggered
        self.delivered += other.delivered
        self.failed += other.failed
        self.dead += other.dead
        self.errors.extend(other.errors)


def _facts(product: Product) -> ProductFacts:
    return ProductFacts(str(product.id), product.store_id, product.name, product.brand,
                        product.category, product.url)


def _message(env: Envelope, product: ProductFacts, trigger: dict[str, Any]) -> str:
    if env.event_type == "Product.BackInStock":
        return f"{product.name} is back in stock"
    if env.event_type == "Product.WentOutOfStock":
        return f"{product.name} went out of stock ({env.payload.get('reason')})"
    old, new = effective_prices(env.payload)
    assert old is not None and new is not None
    pct = (old - new) * 100 / old if old else Decimal(0)
    return (f"{product.name} ({env.payload.get('option')}): {old} -> {new} "
            f"{env.payload.get('currency') or ''} (-{pct:.1f} %)").replace("  ", " ")


def alert_body(subscription: Subscription, env: Envelope, product: ProductFacts,
               trigger: dict[str, Any]) -> str:
    """The JSON sent for one delivery, fixed when it is triggered (retries send it as is)."""
    body = {
        "delivery_id": str(delivery_id(str(subscription.id), env.event_id)),
        "subscription": {"id": str(subscription.id), "name": subscription.name},
        "trigger": trigger,
        "event": {"event_id": env.event_id, "event_type": env.event_type,
                  "occurred_at": env.occurred_at, "payload": env.payload},
        "product": {"id": product.product_id, "store_id": product.store_id,
                    "name": product.name, "brand": product.brand,
                    "category": product.category, "url": product.url},
        "title": f"crawl-ledger: {subscription.name}",
        "message": _message(env, product, trigger),
    }
    return json.dumps(body, sort_keys=True, separators=(",", ":"))


def match(ledger: Ledger, envelopes: Sequence[Envelope], now: datetime) -> list[UUID]:
    """Record a delivery for every (subscription, event) that fires; the new ids."""
    wanted = [e for e in envelopes if e.event_type in TRIGGER_EVENTS]
    if not wanted:
        return []
    app = ledger.app
    rows = ledger.alerts.subscriptions()
    if not rows:
        return []
    subscriptions = app.find_many(Subscription, [UUID(r["subscription_id"]) for r in rows])
    products = app.find_many(Product, {UUID(e.stream_id) for e in wanted})
    created = []
    for env in wanted:
        product = products.get(UUID(env.stream_id))
        if product is None:
            continue
        facts = _facts(product)
        for subscription in subscriptions.values():
            trigger = subscription.match(env.event_type, env.payload, facts)
            if trigger is None:
                continue
            made = app.trigger_delivery(
                subscription_id=str(subscription.id), event_id=env.event_id,
                event_type=env.event_type, product_id=facts.product_id, trigger=trigger,
                body=alert_body(subscription, env, facts, trigger), now=now)
            if made is not None:
                created.append(made)
    return created


class AlertStep:
    """Matches product events and delivers alerts; see the module docstring.

    Ledger commands run on `db`, read-model queries on `projector`."""

    def __init__(self, ledger: Ledger, sender: SenderPort, clock: Clock, db: DbThread,
                 projector: DbThread | None = None, options: AlertOptions | None = None,
                 name: str = "alerts") -> None:
        self.ledger = ledger
        self.sender = sender
        self.clock = clock
        self.db = db
        self.projector = projector or db
        self.options = options or AlertOptions()
        self.name = name
        self._channels: ChannelStore | None = None

    async def channels(self) -> ChannelStore:
        if self._channels is None:
            self._channels = ChannelStore(self.ledger.tables.alert_channels)
        return self._channels

    async def record(self, envelopes: Sequence[Envelope]) -> list[UUID]:
        return await self.db.call(match, self.ledger, envelopes, self.clock.now())

    async def run_once(self, orphaned: bool = False) -> AlertBatch:
        """The embedded driver's turn: match what the log gained since this handler's
        position (saved after its deliveries are recorded), then deliver what is due."""
        channels = await self.channels()
        batch = AlertBatch()
        await self.projector.call(self.ledger.catch_up)  # subscriptions made meanwhile
        position = await self.projector.call(channels.position, self.name)
        while True:
            envelopes = await self.db.call(self.ledger.source.read, position, self.options.batch)
            if not envelopes:
                break
            batch.triggered += len(await self.record(envelopes))
            position = envelopes[-1].position
            await self.projector.call(channels.move, self.name, position)
        await self.projector.call(self.ledger.catch_up)
        batch.add(await self.deliver_due(orphaned))
        return batch

    async def deliver_due(self, orphaned: bool = False) -> AlertBatch:
        due = await self.projector.call(self.ledger.alerts.due_deliveries,
                                        iso(self.clock.now()), orphaned, self.options.batch)
        return await self.deliver(due, orphaned)

    async def deliver(self, ids: Sequence[UUID | str], orphaned: bool = False) -> AlertBatch:
        batch = AlertBatch()
        for one in ids:
            await self._attempt(str(one), orphaned, batch)
        return batch

    async def _attempt(self, delivery: str, orphaned: bool, batch: AlertBatch) -> None:
        now = self.clock.now()
        until = now + timedelta(seconds=self.options.attempt_timeout)
        started = await self.db.call(self.ledger.app.begin_attempt, delivery, until, now,
                                     orphaned)
        if started is None:
            return  # not due, finished, or another sender has it
        found, attempt = started
        outcome = await self._send(found.subscription_id, delivery, found.body, attempt)
        now = self.clock.now()
        if outcome.ok:
            await self.db.call(self.ledger.app.record_delivered, delivery, attempt,
                               outcome.status, now)
            batch.delivered += 1
            return
        last = attempt >= self.options.max_attempts or not outcome.retryable
        retry_at = None if last else self.options.retry_at(attempt, now)
        log.warning("alert %s attempt %d failed: %s%s", delivery, attempt, outcome.error,
                    "" if retry_at else " (dead)")
        await self.db.call(self.ledger.app.record_delivery_failure, delivery, attempt,
                           outcome.error, outcome.status, retry_at, now)
        batch.failed += 1
        batch.dead += retry_at is None
        batch.errors.append(outcome.error)

    async def _send(self, subscription_id: str, delivery: str, body: str,
                    attempt: int) -> SendOutcome:
        channel = await self._channel(subscription_id)
        if isinstance(channel, SendOutcome):
            return channel
        headers = {DELIVERY_HEADER: delivery, "X-Crawl-Ledger-Attempt": str(attempt)}
        return await self.sender.send(channel, body.encode(), headers)

    async def _channel(self, subscription_id: str) -> Channel | SendOutcome:
        subscription = await self.db.call(self.ledger.app.get_subscription, subscription_id)
        if subscription.removed:
            return SendOutcome(False, error="the subscription was removed", retryable=False)
        channels = await self.channels()
        channel = await self.projector.call(channels.get, subscription_id)
        if channel is None:
            return SendOutcome(False, error="the subscription's channel is not configured here",
                               retryable=False)
        return channel
