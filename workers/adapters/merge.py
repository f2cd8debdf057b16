"""The main product, field by field, from every source on the page.

Structured data (JSON-LD, microdata, RDFa, OpenGraph) is trusted first; what it
leaves out is filled from what the page visibly shows (`workers.adapters.visible`)
and where the page is (`workers.currency.Where`):

| field        | precedence                                                        |
|--------------|-------------------------------------------------------------------|
| name         | structured, visible heading, og:title                             |
| price        | structured offer, visible price (struck-through = regular price); a |
|              | structured price shown struck through beside a lower one is the   |
|              | regular price and the lower one the price paid                    |
| currency     | structured, the visible price's symbol, the store's or territory's|
| availability | structured, visible stock line or buy button                      |
"""

from __future__ import annotations

import re
from dataclasses import replace
from decimal import Decimal

from domain.values import Observation, Offer
from workers.adapters.offers import make_offer
from workers.adapters.visible import Visible
from workers.currency import Where
from workers.urls import normalize_url

__all__ = ["complete", "merge"]


def complete(obs: Observation) -> bool:
    """Whether structured data alone said everything the ledger records."""
    priced = [o for o in obs.offers if o.price is not None]
    return bool(priced) and all(o.currency for o in priced) and obs.availability != "unknown"


def merge(obs: Observation | None, seen: Visible, where: Where, page_url: str,
          og_title: str | None) -> Observation | None:
    """`obs` (structured, maybe None) completed from what the page shows."""
    if obs is None:
        return _visible_only(seen, where, page_url, og_title)
    offers = tuple(_with_currency(o, seen, where) for o in obs.offers)
    if not any(o.price is not None for o in offers) and seen.price is not None:
        offers = (_visible_offer(seen),)
    elif len(offers) == 1:
        offers = (_with_visible_sale(offers[0], seen),)
    availability = obs.availability
    if availability == "unknown":
        availability = seen.availability
    return replace(obs, offers=offers, availability=availability)


def _with_currency(offer: Offer, seen: Visible, where: Where) -> Offer:
    if offer.currency or offer.price is None:
        return offer
    # the currency shown beside this very amount, else beside the visible price
    same = next((c.money.currency for c in seen.prices
                 if c.money.amount == offer.price and c.money.currency), None)
    shown = same or (seen.price.currency if seen.price is not None else None)
    return replace(offer, currency=shown or where.default_currency)


def _with_visible_sale(offer: Offer, seen: Visible) -> Offer:
    """Structured data giving only the regular price while the page shows it struck
    through beside a lower one: the lower one is what a buyer pays."""
    if offer.special_price is not None or offer.price is None or seen.price is None:
        return offer
    if seen.price.amount >= offer.price or seen.price.currency not in (None, offer.currency):
        return offer
    best = next(c for c in seen.prices if c.money == seen.price)
    beside = [c.text for c in seen.prices if abs(c.position - best.position) <= 40]
    struck = seen.regular is not None and seen.regular.amount == offer.price
    if not struck and not any(_shows(offer.price, text) for text in beside):
        return offer
    return replace(offer, special_price=seen.price.amount)


def _shows(amount: Decimal, text: str) -> bool:
    """Whether `text` writes `amount` ("18,00", "18.00", "1.299,00", "1,299.00")."""
    plain = f"{amount:.2f}"
    whole, cents = plain.split(".")
    grouped = f"{int(whole):,}"
    forms = {plain, f"{whole},{cents}", f"{grouped}.{cents}",
             f"{grouped.replace(',', '.')},{cents}"}
    return any(re.search(rf"(?<![\d.,]){re.escape(form)}(?![\d])", text) for form in forms)


def _visible_offer(seen: Visible) -> Offer:
    assert seen.price is not None
    regular = seen.regular.amount if seen.regular is not None else None
    return make_offer("default", regular, seen.price.amount, seen.price.currency)


def _visible_only(seen: Visible, where: Where, page_url: str,
                  og_title: str | None) -> Observation | None:
    name = seen.name or og_title
    # no price: still the product, when the page says it cannot be bought now
    unpriced = seen.price is None and seen.availability in ("out_of_stock", "discontinued")
    if not name or (seen.price is None and not unpriced):
        return None
    try:
        url: str | None = normalize_url(page_url)
    except ValueError:
        url = None
    offers: tuple[Offer, ...] = ()
    if seen.price is not None:
        offer = _visible_offer(seen)
        if offer.currency is None and where.default_currency:
            offer = replace(offer, currency=where.default_currency)
        offers = (offer,)
    return Observation(provider_product_id=url or page_url, name=name[:300], offers=offers,
                       availability=seen.availability, url=url)
