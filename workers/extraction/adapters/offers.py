"""Building `Offer`s the same way in every adapter.

Every platform reports a sale differently (compare-at price, regular/sale
pair, strikethrough price specification, "special" price arrays); they all end
up as `price` = the regular price and `special_price` = what you pay now.
"""

from __future__ import annotations

from collections.abc import Iterable
from decimal import Decimal

from domain.values import Offer

__all__ = ["make_offer", "overall_availability"]

#: If any offer has one of these, the product as a whole has it (best first).
_PRECEDENCE = ("in_stock", "limited", "preorder", "backorder", "out_of_stock", "discontinued")


def make_offer(
    option: str,
    regular: Decimal | None,
    current: Decimal | None,
    currency: str | None,
    *,
    availability: str | None = None,
    quantity: int | None = None,
    pricing_type: str = "regular",
) -> Offer:
    """`current` below `regular` is a sale; otherwise the current price is the price."""
    price: Decimal | None = current if current is not None else regular
    special: Decimal | None = None
    if regular is not None and current is not None and current < regular:
        price, special = regular, current
    return Offer(
        option=option or "default",
        price=price,
        currency=currency,
        special_price=special,
        pricing_type=pricing_type,
        availability=availability,
        quantity=quantity,
    )


def overall_availability(offers: Iterable[Offer]) -> str:
    """The product's availability from its offers' (unknown when none say)."""
    seen = {offer.availability for offer in offers}
    return next((value for value in _PRECEDENCE if value in seen), "unknown")
