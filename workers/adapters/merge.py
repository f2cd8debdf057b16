"""The main product, field by field, from every source on the page.

Structured data (JSON-LD, microdata, RDFa, OpenGraph) is trusted first; what it
leaves out is filled from what the page visibly shows (`workers.adapters.visible`)
and where the page is (`workers.currency.Where`):

| field        | precedence                                                        |
|--------------|-------------------------------------------------------------------|
| name         | structured, visible heading, og:title                             |
| price        | structured offer, visible price (struck-through = regular price)  |
| currency     | structured, the visible price's symbol, the store's or territory's|
| availability | structured, visible stock line or buy button                      |
"""

from __future__ import annotations

from dataclasses import replace

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
    availability = obs.availability
    if availability == "unknown":
        availability = seen.availability
    return replace(obs, offers=offers, availability=availability)


def _with_currency(offer: Offer, seen: Visible, where: Where) -> Offer:
    if offer.currency or offer.price is None:
        return offer
    shown = seen.price.currency if seen.price is not None else None
    return replace(offer, currency=shown or where.default_currency)


def _visible_offer(seen: Visible) -> Offer:
    assert seen.price is not None
    regular = seen.regular.amount if seen.regular is not None else None
    return make_offer("default", regular, seen.price.amount, seen.price.currency)


def _visible_only(seen: Visible, where: Where, page_url: str,
                  og_title: str | None) -> Observation | None:
    name = seen.name or og_title
    if seen.price is None or not name:
        return None
    try:
        url: str | None = normalize_url(page_url)
    except ValueError:
        url = None
    offer = _visible_offer(seen)
    if offer.currency is None and where.default_currency:
        offer = replace(offer, currency=where.default_currency)
    return Observation(provider_product_id=url or page_url, name=name[:300], offers=(offer,),
                       availability=seen.availability, url=url)
