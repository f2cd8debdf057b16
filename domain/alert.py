"""The Subscription aggregate: who wants to hear about which price and stock changes.

A subscription has a target (one product, every product of one store, or the
products whose name, brand or category contain a search text), one or more
triggers, and a channel (a signed JSON webhook or an Apprise URL). Only the
channel's kind and a display form without credentials are in its events: the
URL itself and the webhook secret are kept beside the log (`runtime.alert_channels`),
so an export, the Kafka topics or `events tail` never carry them.

`match` decides, for one product event, which trigger (if any) fires; it is a
pure function of the event's payload and the product's facts.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal, InvalidOperation
from typing import Any
from urllib.parse import urlsplit

from eventsourcing.domain import event

from domain.aggregate import LedgerAggregate
from domain.errors import InvalidInput, InvalidTransition
from domain.snapshot_event import LedgerSnapshot
from domain.values import Origin

__all__ = ["CHANNEL_KINDS", "TARGET_KINDS", "TRIGGER_EVENTS", "TRIGGER_KINDS",
           "ProductFacts", "Subscription", "check_triggers", "effective_prices"]

TARGET_KINDS = ("product", "store", "search")
#: trigger kind -> whether it takes a value (percent, price)
TRIGGER_KINDS = {"price_drop": True, "price_below": True, "back_in_stock": False,
                 "out_of_stock": False}
CHANNEL_KINDS = ("webhook", "apprise")
#: the product events a trigger can fire on
TRIGGER_EVENTS = ("Product.PriceChanged", "Product.BackInStock", "Product.WentOutOfStock")


@dataclass(frozen=True)
class ProductFacts:
    """What matching needs to know about the product an event belongs to."""

    product_id: str
    store_id: str
    name: str
    brand: str | None = None
    category: str | None = None
    url: str | None = None


def _decimal(text: Any, what: str) -> Decimal:
    try:
        value = Decimal(str(text))
    except (InvalidOperation, ValueError):
        raise InvalidInput(f"{what} {text!r} is not a number") from None
    if not value.is_finite():
        raise InvalidInput(f"{what} {text!r} is not a finite number")
    return value


def check_triggers(triggers: list[dict[str, Any]]) -> list[dict[str, str | None]]:
    """Validated triggers as primitives: [{"kind", "value"}] (value a decimal string)."""
    if not triggers:
        raise InvalidInput("a subscription needs at least one trigger")
    checked: list[dict[str, str | None]] = []
    for trigger in triggers:
        kind = trigger.get("kind")
        if kind not in TRIGGER_KINDS:
            raise InvalidInput(f"unknown trigger {kind!r}; expected one of "
                               f"{', '.join(TRIGGER_KINDS)}")
        value = trigger.get("value")
        if not TRIGGER_KINDS[kind]:
            checked.append({"kind": kind, "value": None})
            continue
        if value is None:
            raise InvalidInput(f"trigger {kind} needs a value")
        number = _decimal(value, f"{kind} value")
        if kind == "price_drop" and not Decimal(0) < number <= Decimal(100):
            raise InvalidInput(f"price_drop must be a percentage in (0, 100], not {value}")
        if kind == "price_below" and number <= 0:
            raise InvalidInput(f"price_below must be a positive price, not {value}")
        checked.append({"kind": kind, "value": str(number)})
    return checked


def check_target(kind: str, target: str) -> str:
    if kind not in TARGET_KINDS:
        raise InvalidInput(f"unknown target kind {kind!r}; expected one of {', '.join(TARGET_KINDS)}")
    if not target.strip():
        raise InvalidInput(f"the {kind} target is empty")
    return target.strip() if kind != "search" else target.strip().lower()


def check_channel(kind: str, display: str) -> None:
    if kind not in CHANNEL_KINDS:
        raise InvalidInput(f"unknown channel kind {kind!r}; expected one of {', '.join(CHANNEL_KINDS)}")
    if not display or urlsplit(display).scheme == "":
        raise InvalidInput("the channel needs a URL")


def effective_prices(payload: dict[str, Any]) -> tuple[Decimal | None, Decimal | None]:
    """(old, new) price a shopper pays in a `PriceChanged` payload (the special when set)."""
    def pick(price: Any, special: Any) -> Decimal | None:
        chosen = special if special is not None else price
        return Decimal(str(chosen)) if chosen is not None else None
    return (pick(payload.get("old"), payload.get("old_special")),
            pick(payload.get("new"), payload.get("new_special")))


class Subscription(LedgerAggregate):
    """An alert subscription: target, triggers, channel; removed once, never revived.

    Who created or removed it (`Origin`: actor, surface, reason) is recorded on those
    events when the command carried it, and so is every test send with its outcome
    (`Tested`); subscriptions recorded before these optional fields existed have none.
    """

    Snapshot = LedgerSnapshot

    #: class defaults: a snapshot or a history from before these fields existed has none
    created_by: str | None = None
    created_via: str | None = None
    removed_by: str | None = None
    #: the latest test send: at, delivered, status, error, actor
    last_test: dict[str, Any] | None = None

    @event("Created")
    def __init__(self, name: str, target_kind: str, target: str,
                 triggers: list[dict[str, Any]], channel_kind: str, channel: str,
                 at: datetime, actor: str | None = None, surface: str | None = None,
                 reason: str | None = None) -> None:
        self.name = name
        self.target_kind = target_kind
        self.target = target
        self.triggers = triggers
        self.channel_kind = channel_kind
        self.channel = channel
        self.removed = False
        self.created_by, self.created_via = actor, surface

    @classmethod
    def create(cls, *, name: str, target_kind: str, target: str,
               triggers: list[dict[str, Any]], channel_kind: str, channel: str,
               at: datetime, origin: Origin | None = None) -> Subscription:
        """Validate, then create (the only way commands make one)."""
        target = check_target(target_kind, target)
        checked = check_triggers(triggers)
        check_channel(channel_kind, channel)
        return cls(name=name.strip() or f"{target_kind} {target}", target_kind=target_kind,
                   target=target, triggers=checked, channel_kind=channel_kind,
                   channel=channel, at=at, **_by(origin))

    def remove(self, at: datetime, origin: Origin | None = None) -> None:
        if self.removed:
            raise InvalidTransition(f"subscription {self.id} is already removed")
        self._removed(at, **_by(origin))

    def tested(self, at: datetime, delivered: bool, status: int | None, error: str,
               origin: Origin | None = None) -> None:
        """Record a test send's outcome (the send itself happens outside the aggregate)."""
        if self.removed:
            raise InvalidTransition(f"subscription {self.id} is removed")
        self._tested(at, delivered, status, error[:500], **_by(origin))

    @event("Removed")
    def _removed(self, at: datetime, actor: str | None = None, surface: str | None = None,
                 reason: str | None = None) -> None:
        self.removed = True
        self.removed_by = actor

    @event("Tested")
    def _tested(self, at: datetime, delivered: bool, status: int | None, error: str,
                actor: str | None = None, surface: str | None = None,
                reason: str | None = None) -> None:
        self.last_test = {"at": at.isoformat(), "delivered": delivered, "status": status,
                          "error": error, "actor": actor, "surface": surface}

    # matching -------------------------------------------------------------
    def targets(self, product: ProductFacts) -> bool:
        if self.target_kind == "product":
            return product.product_id == self.target
        if self.target_kind == "store":
            return product.store_id == self.target
        text = " ".join(v for v in (product.name, product.brand, product.category) if v)
        return self.target in text.lower()

    def match(self, event_type: str, payload: dict[str, Any],
              product: ProductFacts) -> dict[str, Any] | None:
        """The first trigger this product event fires, or None."""
        if self.removed or not self.targets(product):
            return None
        for trigger in self.triggers:
            if fires(trigger, event_type, payload):
                return dict(trigger)
        return None


def _by(origin: Origin | None) -> dict[str, str | None]:
    """The event fields that record who asked (none when no origin was given)."""
    return origin.fields() if origin is not None else {}


def fires(trigger: dict[str, Any], event_type: str, payload: dict[str, Any]) -> bool:
    kind = trigger["kind"]
    if kind == "back_in_stock":
        return event_type == "Product.BackInStock"
    if kind == "out_of_stock":
        return event_type == "Product.WentOutOfStock"
    if event_type != "Product.PriceChanged":
        return False
    old, new = effective_prices(payload)
    if old is None or new is None or new >= old:
        return False
    value = Decimal(str(trigger["value"]))
    if kind == "price_drop":
        return old > 0 and (old - new) * 100 / old >= value
    return new < value <= old  # price_below: crossing the line downwards
