"""OpenGraph product tags (`og:title`, `product:price:amount`, …) -> Observation.

Used when a page has no schema.org Product: many shops only emit these for
social previews, and they are still the shop's own statement of the price. The
price is `product:price:amount` or `og:price:amount`, else the shorter `product:price`
or `og:price` ("30,000원~"), else a Twitter card's `twitter:dataN` whose
`twitter:labelN` says it is the price (WooCommerce and Shopify themes write
"Price" / "€344.00").
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from domain.values import Observation, Offer
from workers.extraction.adapters.offers import make_offer
from workers.extraction.availability import to_availability
from workers.extraction.prices import PRICE_WORDS, parse_price
from workers.extraction.urls import normalize_url

__all__ = ["opengraph_observation"]


def opengraph_observation(
    og: Mapping[str, str], page_url: str, hint: str | None
) -> Observation | None:
    amount = og.get("product:price:amount") or og.get("og:price:amount") or og.get(
        "product:price") or og.get("og:price") or _twitter_price(og)
    currency = og.get("product:price:currency") or og.get("og:price:currency") or hint
    name = og.get("og:title")
    if not name or not (amount or og.get("og:type", "").lower() == "product"):
        return None
    availability = to_availability(og.get("product:availability") or og.get("og:availability"))
    offers = _offers(og, amount, currency, availability)
    url = _url(og.get("og:url"), page_url)
    return Observation(
        provider_product_id=og.get("product:retailer_item_id") or url or page_url,
        name=name,
        offers=offers,
        availability=availability,
        brand=og.get("product:brand"),
        url=url,
        image_url=_url(og.get("og:image"), page_url),
    )


def _offers(
    og: Mapping[str, str], amount: str | None, currency: str | None, availability: str
) -> tuple[Offer, ...]:
    money = parse_price(amount, currency, structured=True)
    if not money:
        return ()
    sale = parse_price(og.get("product:sale_price:amount"), currency, structured=True)
    current = sale.amount if sale else money.amount
    return (
        make_offer("default", money.amount, current, money.currency, availability=availability),
    )


_PRICE_LABEL = re.compile(rf"^(?:{PRICE_WORDS})\b", re.IGNORECASE)


def _twitter_price(og: Mapping[str, str]) -> str | None:
    for n in (1, 2, 3, 4):
        if _PRICE_LABEL.match(og.get(f"twitter:label{n}", "").strip()):
            return og.get(f"twitter:data{n}")
    return None


def _url(value: str | None, base: str) -> str | None:
    try:
        return normalize_url(value, base) if value else None
    except ValueError:
        return None
