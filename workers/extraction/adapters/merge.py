"""The main product, field by field, from every source on the page, with lineage.

Structured data (JSON-LD, microdata, RDFa, OpenGraph) is trusted first; what it
leaves out is filled from what the page visibly shows (`workers.extraction.adapters.visible`)
and where the page is (`workers.extraction.currency.Where`):

| field        | precedence                                                        |
|--------------|-------------------------------------------------------------------|
| name         | structured, visible heading, og:title, document title             |
| price        | structured offer, visible price (struck-through = regular price); a |
|              | structured price shown struck through beside a lower one is the   |
|              | regular price and the lower one the price paid; on an auction, a  |
|              | higher bid shown beside the bid button is the price               |
| currency     | structured, the symbol shown beside that amount, the visible      |
|              | price's, the store's configured currency, the territory's         |
| availability | structured, visible stock line or buy button; a product offered   |
|              | for a price with no stock line at all is taken as in stock        |

Each field's source is recorded on the observation (`attributes["source.<field>"]`; a
structured observation may name a field's source itself, as when the platform's JSON
said its stock), so every Observed event says where its values came from; `explain`
lists the alternatives that lost as well (`crawl-ledger extract --explain`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from decimal import Decimal

from domain.values import Observation, Offer
from workers.extraction.adapters.offers import make_offer
from workers.extraction.adapters.price_candidates import collect, why
from workers.extraction.adapters.schema_product import PRICE_HIGH
from workers.extraction.adapters.visible import Visible
from workers.extraction.currency import Where
from workers.extraction.prices import written_forms
from workers.extraction.urls import normalize_url

__all__ = ["Choice", "complete", "merge"]

FIELDS = ("name", "price", "regular_price", "currency", "availability")
#: the availability source when the page offers the product for a price and shows no
#: stock line at all: offered, so taken as available (said so in the lineage)
OFFERED = "offered for a price, no stock line shown"


@dataclass(frozen=True)
class Choice:
    """One field of the main product: the value taken, from where, and what lost."""

    field: str
    value: str | None
    source: str
    alternatives: tuple[tuple[str, str], ...] = ()
    #: the ranking rule the value won by (the price: `workers.extraction.adapters.price_candidates`)
    why: str = ""


def complete(obs: Observation) -> bool:
    """Whether structured data alone said everything the ledger records."""
    priced = [o for o in obs.offers if o.price is not None]
    return bool(priced) and all(o.currency for o in priced) and obs.availability != "unknown"


def merge(obs: Observation | None, origin: str | None, seen: Visible | None, where: Where,
          page_url: str, og: Mapping[str, str]) -> tuple[Observation | None, tuple[Choice, ...]]:
    """`obs` (structured, from `origin`; maybe None) completed from what the page shows."""
    sources: dict[str, str] = {}
    if obs is None:
        merged = _visible_only(seen, where, page_url, og.get("og:title"), sources) \
            if seen is not None else None
    else:
        # every field from `origin`, but one the observation already names a source for
        sources.update({f: obs.attributes.get(f"source.{f}") or origin or "structured"
                        for f in FIELDS})
        merged = _completed(obs, seen or Visible(), where, sources) if seen is not None else obs
    if merged is None:
        return None, ()
    offer = merged.offers[0] if merged.offers else None
    values = {
        "name": merged.name,
        "price": _text(_paid(offer)),
        "regular_price": _text(offer.price if offer and offer.special_price is not None
                               else None),
        "currency": offer.currency if offer else None,
        "availability": merged.availability,
    }
    for field, value in values.items():
        if value is None or value == "unknown":
            sources[field] = "none"
    attributes = {**merged.attributes, **{f"source.{f}": sources[f] for f in FIELDS
                                          if sources.get(f, "none") != "none"}}
    choices = tuple(Choice(f, values[f], sources.get(f, "none"), _alternatives(f, seen, og))
                    for f in FIELDS if f != "price")
    price = Choice("price", values["price"], sources.get("price", "none"),
                   _price_alternatives(obs, origin, seen, og, _paid(offer)),
                   why(sources["price"]) if values["price"] is not None else "")
    return replace(merged, attributes=attributes), (choices[0], price, *choices[1:])


def _completed(obs: Observation, seen: Visible, where: Where,
               sources: dict[str, str]) -> Observation:
    offers = tuple(_with_currency(o, seen, where, sources) for o in obs.offers)
    if not any(o.price is not None for o in offers) and seen.price is not None:
        offers = (_visible_offer(seen),)
        sources.update(price="visible", regular_price="visible",
                       currency="visible" if seen.price.currency else sources["currency"])
    elif len(offers) == 1:
        offer = _within_range(offers[0], obs.attributes.get(PRICE_HIGH), seen, sources)
        offers = (_with_visible_bid(_with_visible_sale(offer, seen, sources), seen, sources),)
    elif seen.price is not None:
        # several offers: the one whose price the page shows as the price comes first
        shown = [o for o in offers if _paid(o) == seen.price.amount]
        offers = (*shown[:1], *(o for o in offers if o not in shown[:1]))
    availability = obs.availability
    if availability == "unknown" or (availability == "in_stock" and seen.buy_disabled
                                     and seen.stock_words == "out_of_stock"):
        # a structured "in stock" is often a template's default; a disabled buy control
        # with the page's own out-of-stock words beside it is what a buyer meets
        availability = seen.availability
        sources["availability"] = "visible" if obs.availability == "unknown" else \
            "visible stock words and a disabled buy control, over the structured in stock"
    if availability == "unknown" and any(_paid(o) is not None for o in offers):
        availability = "in_stock"
        sources["availability"] = OFFERED
    return replace(obs, offers=offers, availability=availability)


def _with_currency(offer: Offer, seen: Visible, where: Where, sources: dict[str, str]) -> Offer:
    if offer.currency or offer.price is None:
        return offer
    # the currency shown beside this very amount, else beside the visible price
    same = next((c.money.currency for c in seen.prices
                 if c.money.amount == offer.price and c.money.currency), None)
    shown = same or (seen.price.currency if seen.price is not None else None)
    sources["currency"] = ("visible, beside this price" if same else "visible price" if shown
                           else "store currency" if where.hint else f"territory {where.territory}")
    return replace(offer, currency=shown or where.default_currency)


def _with_visible_sale(offer: Offer, seen: Visible, sources: dict[str, str]) -> Offer:
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
    sources["price"] = "visible sale price beside the structured one"
    return replace(offer, special_price=seen.price.amount)


def _within_range(offer: Offer, high: str | None, seen: Visible, sources: dict[str, str]
                  ) -> Offer:
    """A structured price range (an AggregateOffer from `lowPrice` to `highPrice`) names
    what the cheapest variant costs; the one price the page shows inside the range is
    what the variant on display costs, and what a buyer of it pays."""
    if high is None or offer.price is None or offer.special_price is not None \
            or seen.price is None or seen.price.currency not in (None, offer.currency) \
            or not offer.price < seen.price.amount <= Decimal(high):
        return offer
    sources["price"] = "visible price inside the structured price range"
    return replace(offer, price=seen.price.amount)


def _with_visible_bid(offer: Offer, seen: Visible, sources: dict[str, str]) -> Offer:
    """An auction's structured price is its starting bid; the higher bid the page shows
    beside its bid button is what a buyer pays now."""
    if not seen.bidding or seen.price is None or offer.price is None \
            or offer.special_price is not None or seen.price.amount <= offer.price \
            or seen.price.currency not in (None, offer.currency):
        return offer
    sources["price"] = "visible current bid beside the bid button"
    return replace(offer, price=seen.price.amount)


def _shows(amount: Decimal, text: str) -> bool:
    """Whether `text` writes `amount` ("18,00", "18.00", "1.299,00", "1,299.00")."""
    return any(re.search(rf"(?<![\d.,]){re.escape(form)}(?![\d])", text)
               for form in written_forms(amount))


def _visible_offer(seen: Visible) -> Offer:
    assert seen.price is not None
    regular = seen.regular.amount if seen.regular is not None else None
    return make_offer("default", regular, seen.price.amount, seen.price.currency)


def _visible_only(seen: Visible, where: Where, page_url: str, og_title: str | None,
                  sources: dict[str, str]) -> Observation | None:
    name = seen.name or og_title or seen.title
    # no price: still the product, when the page says it cannot be bought now
    unpriced = seen.price is None and seen.availability in ("out_of_stock", "discontinued")
    if not name or (seen.price is None and not unpriced):
        return None
    try:
        url: str | None = normalize_url(page_url)
    except ValueError:
        url = None
    sources.update(name="visible heading" if seen.name else "og:title" if og_title else
                   "document title", price="visible",
                   regular_price="visible", availability="visible", currency="visible")
    offers: tuple[Offer, ...] = ()
    availability = seen.availability
    if seen.price is not None and availability == "unknown":
        availability, sources["availability"] = "in_stock", OFFERED
    if seen.price is not None:
        offer = _visible_offer(seen)
        if offer.currency is None and where.default_currency:
            offer = replace(offer, currency=where.default_currency)
            sources["currency"] = "store currency" if where.hint else f"territory {where.territory}"
        offers = (offer,)
    return Observation(provider_product_id=url or page_url, name=name[:300], offers=offers,
                       availability=availability, url=url)


def _paid(offer: Offer | None) -> Decimal | None:
    if offer is None:
        return None
    return offer.special_price if offer.special_price is not None else offer.price


def _text(value: Decimal | None) -> str | None:
    return None if value is None else format(value, "f")


def _price_alternatives(obs: Observation | None, origin: str | None, seen: Visible | None,
                        og: Mapping[str, str], paid: Decimal | None
                        ) -> tuple[tuple[str, str], ...]:
    """Every price candidate, structured first, then the best visible ones; the first
    that gives the price taken is marked CHOSEN."""
    found: list[tuple[str, str]] = []
    marked = False
    for candidate in collect(obs, origin, seen)[:12]:
        chosen = not marked and not candidate.regular and candidate.amount == paid
        marked = marked or chosen
        found.append((candidate.describe(chosen), candidate.source))
    if og.get("product:price:amount"):
        found.append((og["product:price:amount"], "product:price:amount"))
    return tuple(found)


def _alternatives(field: str, seen: Visible | None, og: Mapping[str, str]
                  ) -> tuple[tuple[str, str], ...]:
    found: list[tuple[str, str]] = []
    if seen is not None:
        if field == "name" and seen.name:
            found.append((seen.name, "visible heading"))
        elif field == "availability":
            found.append((seen.availability, "visible"))
        elif field == "currency" and seen.price is not None and seen.price.currency:
            found.append((seen.price.currency, "visible price"))
    og_keys = {"name": "og:title", "price": "product:price:amount",
               "currency": "product:price:currency", "availability": "product:availability"}
    if og.get(og_keys.get(field, "")):
        found.append((og[og_keys[field]], og_keys[field]))
    return tuple(found)
