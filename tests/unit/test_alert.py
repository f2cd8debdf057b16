"""Subscriptions and deliveries as pure domain objects: validation, matching, transitions."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from domain.alert import ProductFacts, Subscription
from domain.delivery import Delivery
from domain.errors import InvalidInput, InvalidTransition
from workers.alert_delivery.notify import display_url, sign

T0 = datetime(2026, 3, 1, 8, 0, tzinfo=UTC)
HOODIE = ProductFacts("p1", "s1", "Blue Hoodie", brand="Acme", category="Apparel")


def sub(triggers: list[dict[str, Any]], kind: str = "product", target: str = "p1") -> Subscription:
    return Subscription.create(name="", target_kind=kind, target=target, triggers=triggers,
                               channel_kind="webhook", channel="https://hooks.example/x", at=T0)


def price(old: str | None, new: str | None, old_special: str | None = None,
          new_special: str | None = None) -> dict[str, Any]:
    return {"option": "M", "old": old, "new": new, "old_special": old_special,
            "new_special": new_special, "currency": "EUR"}


@pytest.mark.parametrize(("triggers", "message"), [
    ([], "at least one trigger"),
    ([{"kind": "cheaper"}], "unknown trigger"),
    ([{"kind": "price_drop"}], "needs a value"),
    ([{"kind": "price_drop", "value": "0"}], "percentage"),
    ([{"kind": "price_drop", "value": "101"}], "percentage"),
    ([{"kind": "price_drop", "value": "NaN"}], "finite"),
    ([{"kind": "price_below", "value": "-1"}], "positive"),
    ([{"kind": "price_below", "value": "abc"}], "not a number"),
])
def test_bad_triggers_are_refused(triggers: list[dict[str, Any]], message: str) -> None:
    with pytest.raises(InvalidInput, match=message):
        sub(triggers)


def test_bad_targets_and_channels_are_refused() -> None:
    with pytest.raises(InvalidInput, match="target kind"):
        sub([{"kind": "back_in_stock"}], kind="brand")
    with pytest.raises(InvalidInput, match="empty"):
        sub([{"kind": "back_in_stock"}], kind="search", target="  ")
    with pytest.raises(InvalidInput, match="channel kind"):
        Subscription.create(name="", target_kind="search", target="x",
                            triggers=[{"kind": "back_in_stock"}], channel_kind="sms",
                            channel="sms://x", at=T0)


def test_price_drop_fires_at_the_threshold_on_the_price_a_shopper_pays() -> None:
    drop = sub([{"kind": "price_drop", "value": "10"}])
    changed = "Product.PriceChanged"
    assert drop.match(changed, price("40.00", "36.00"), HOODIE) == {"kind": "price_drop",
                                                                    "value": "10"}
    assert drop.match(changed, price("40.00", "36.01"), HOODIE) is None  # 9.975 %
    assert drop.match(changed, price("40.00", "50.00"), HOODIE) is None
    assert drop.match(changed, price("40.00", "40.00", None, "30.00"), HOODIE) is not None
    assert drop.match(changed, price(None, "30.00"), HOODIE) is None
    assert drop.match("Product.BackInStock", {}, HOODIE) is None


def test_price_below_fires_when_the_price_crosses_the_line() -> None:
    below = sub([{"kind": "price_below", "value": "30"}])
    changed = "Product.PriceChanged"
    assert below.match(changed, price("35.00", "29.99"), HOODIE) is not None
    assert below.match(changed, price("30.00", "29.00"), HOODIE) is not None
    assert below.match(changed, price("29.00", "25.00"), HOODIE) is None  # already below
    assert below.match(changed, price("35.00", "30.00"), HOODIE) is None


def test_targets_product_store_and_search() -> None:
    stock = [{"kind": "back_in_stock"}, {"kind": "out_of_stock"}]
    assert sub(stock, "store", "s1").match("Product.WentOutOfStock", {}, HOODIE) == {
        "kind": "out_of_stock", "value": None}
    assert sub(stock, "store", "s2").match("Product.WentOutOfStock", {}, HOODIE) is None
    assert sub(stock, "search", "ACME").match("Product.BackInStock", {}, HOODIE) is not None
    assert sub(stock, "search", "apparel").match("Product.BackInStock", {}, HOODIE) is not None
    assert sub(stock, "search", "red").match("Product.BackInStock", {}, HOODIE) is None
    assert sub(stock, "product", "p2").match("Product.BackInStock", {}, HOODIE) is None


def test_a_removed_subscription_matches_nothing_and_is_removed_once() -> None:
    removed = sub([{"kind": "back_in_stock"}])
    removed.remove(T0)
    assert removed.match("Product.BackInStock", {}, HOODIE) is None
    with pytest.raises(InvalidTransition):
        removed.remove(T0)


def test_a_delivery_id_depends_on_subscription_and_event_only() -> None:
    make = lambda s, e: Delivery(subscription_id=s, event_id=e,  # noqa: E731
                                 event_type="Product.BackInStock", product_id="p",
                                 trigger={}, body="{}", at=T0)
    assert make("a", "p:3").id == make("a", "p:3").id
    assert len({make("a", "p:3").id, make("b", "p:3").id, make("a", "p:4").id}) == 3


def test_delivery_transitions() -> None:
    delivery = Delivery(subscription_id="a", event_id="p:3", event_type="Product.BackInStock",
                        product_id="p", trigger={}, body="{}", at=T0)
    assert delivery.due(T0)
    first = delivery.attempt(T0 + timedelta(seconds=60), T0)
    assert not delivery.due(T0 + timedelta(seconds=59))  # in flight
    assert delivery.due(T0 + timedelta(seconds=60)) and delivery.due(T0, orphaned=True)
    delivery.fail(first, "HTTP 500", 500, T0 + timedelta(seconds=30), T0)
    assert not delivery.due(T0) and delivery.due(T0 + timedelta(seconds=30))
    second = delivery.attempt(T0 + timedelta(seconds=90), T0 + timedelta(seconds=30))
    with pytest.raises(InvalidTransition):
        delivery.succeed(first, 200, T0)  # not the attempt in flight
    delivery.fail(second, "HTTP 500", 500, None, T0)
    assert delivery.state == "dead" and not delivery.due(T0, orphaned=True)
    with pytest.raises(InvalidTransition):
        delivery.attempt(T0, T0)


def test_signature_and_display_url() -> None:
    # the well-known HMAC-SHA256 example vector
    assert sign("key", b"The quick brown fox jumps over the lazy dog") == (
        "sha256=f7bc83f430538424b13298e6aa6fb143ef4d59a14946175997479dbc2d1a3cd8")
    assert display_url("https://u:pw@hooks.example:8443/x?token=1") == "https://hooks.example:8443/x"
    assert display_url("tgram://123:ABC/456") == "tgram://…"
    assert display_url("json://user:pw@ntfy.example/topic") == "json://ntfy.example/topic"
