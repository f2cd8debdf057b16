"""A schema.org `Product` (from JSON-LD, microdata or RDFa) -> `Observation`.

Offers may be one `Offer`, a list, or an `AggregateOffer` (with or without
nested offers); prices may sit on the offer or in a `priceSpecification`.
A StrikethroughPrice/ListPrice specification is the regular price, which
makes the offer's own price the special (sale) price; a specification for buying at
least N > 1 units (`eligibleQuantity.minValue`) is a quantity tier, kept as an offer
of pricing type `tier`.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from domain.values import Observation, Offer
from workers.extraction.adapters.offers import make_offer, overall_availability
from workers.extraction.adapters.payload import as_dicts, as_list, first_text, plain_text, text
from workers.extraction.availability import to_availability
from workers.extraction.currency import resolve
from workers.extraction.prices import parse_amount, parse_price
from workers.extraction.urls import normalize_url

__all__ = ["is_type", "product_observation", "type_name"]

_REGULAR_TYPES = {"strikethroughprice", "listprice", "msrp", "srp"}


def is_type(node: Any, name: str) -> bool:
    if not isinstance(node, dict):
        return False
    wanted = name.lower()
    return any(isinstance(t, str) and type_name(t) == wanted for t in as_list(node.get("@type")))


def type_name(written: str) -> str:
    """A type's name as `is_type` compares it, however it is written (an IRI, a CURIE,
    a term): its last segment, lower-cased ("http://schema.org/Product" -> "product")."""
    return written.rstrip("/").rsplit("/", 1)[-1].rsplit(":", 1)[-1].lower()


def product_observation(
    node: dict[str, Any], page_url: str, hint: str | None, default_url: str | None = None
) -> Observation | None:
    """`default_url` is the page's own URL, for the main product of a product page."""
    name = _scalar(node.get("name"))
    if not name:
        return None
    url = _url(_scalar(node.get("url")) or _scalar(node.get("@id")) or default_url, page_url)
    offers = _offers(node.get("offers"), hint)
    sku = _scalar(node.get("sku"))
    # an offer that ends at a time (an auction's close): kept, and it tells `merge` the
    # price may be a starting bid
    ends = next((_scalar(o.get("availabilityEnds")) for o in _flat_offers(node.get("offers"), 0)
                 if _scalar(o.get("availabilityEnds"))), None)
    attributes = {"availability_ends": ends} if ends else {}
    high = _range_high(node.get("offers"), offers, hint)
    if high is not None:
        attributes[PRICE_HIGH] = format(high, "f")
    return Observation(
        provider_product_id=sku or _scalar(node.get("productID")) or url or page_url,
        name=name,
        offers=offers,
        availability=_availability(offers, node.get("offers")),
        brand=_brand(node.get("brand")),
        category=_scalar(node.get("category")),
        url=url,
        image_url=_image(node.get("image"), page_url),
        sku=sku,
        description=plain_text(node.get("description")),
        attributes=attributes,
    )


#: the attribute holding the top of an AggregateOffer's price range (`lowPrice` is the
#: offer's price): the page may show which price in it the variant on display costs
PRICE_HIGH = "price_range_high"


def _range_high(raw: Any, offers: tuple[Offer, ...], hint: str | None) -> Decimal | None:
    """The `highPrice` of the product's one offer when it is a range (an AggregateOffer
    from `lowPrice` to a higher `highPrice`), else None."""
    nodes = _flat_offers(raw, depth=0)
    if len(nodes) != 1 or len(offers) != 1 or offers[0].price is None:
        return None
    high, _ = _money(nodes[0].get("highPrice"), _scalar(nodes[0].get("priceCurrency")) or hint)
    return high if high is not None and high > offers[0].price else None


def _availability(offers: tuple[Offer, ...], raw: Any) -> str:
    # An offer without a usable price is dropped, but what it says about stock
    # ("BackOrder", "Price on request, out of stock") still counts.
    found = overall_availability(offers)
    if found != "unknown":
        return found
    said = (to_availability(node.get("availability")) for node in _flat_offers(raw, depth=0))
    return next((value for value in said if value != "unknown"), "unknown")


def _scalar(value: Any) -> str | None:
    if isinstance(value, list):
        return first_text(*value)
    return text(value)


def _url(value: str | None, page_url: str) -> str | None:
    if not value:
        return None
    try:
        return normalize_url(value, page_url)
    except ValueError:
        return None


def _brand(value: Any) -> str | None:
    for item in as_list(value):
        found = _scalar(item.get("name")) if isinstance(item, dict) else text(item)
        if found:
            return found
    return None


def _image(value: Any, page_url: str) -> str | None:
    for item in as_list(value):
        raw = (
            first_text(item.get("url"), item.get("contentUrl"))
            if isinstance(item, dict)
            else text(item)
        )
        if raw and (found := _url(raw, page_url)):
            return found
    return None


def _offers(value: Any, hint: str | None) -> tuple[Offer, ...]:
    nodes = _flat_offers(value, depth=0)
    offers = [_offer(node, index, len(nodes), hint) for index, node in enumerate(nodes)]
    found = [offer for offer in offers if offer is not None]
    # quantity tiers after the offers themselves: the first offer stays the price shown
    return (*found, *(tier for node, offer in zip(nodes, offers, strict=True)
                      if offer is not None for tier in _tiers(node, offer, hint)))


def _tiers(node: dict[str, Any], offer: Offer, hint: str | None) -> list[Offer]:
    """A `priceSpecification` for buying at least N (`eligibleQuantity.minValue` > 1):
    an offer of pricing type `tier`, option "<option> ×N+", at that unit price."""
    found = []
    for spec in as_dicts(node.get("priceSpecification")):
        least = _least_quantity(spec)
        if least is None:
            continue
        amount, currency = _money(spec.get("price"), _scalar(spec.get("priceCurrency")) or hint)
        if amount is not None:
            found.append(make_offer(f"{offer.option} ×{least}+", None, amount,
                                    currency or offer.currency, pricing_type="tier"))
    return found


def _least_quantity(spec: dict[str, Any]) -> int | None:
    """N when the specification holds only for buying at least N > 1 units."""
    quantity = spec.get("eligibleQuantity")
    least = parse_amount(quantity.get("minValue"), structured=True) \
        if isinstance(quantity, dict) else None
    return int(least) if least is not None and least > 1 and least == int(least) else None


def _flat_offers(value: Any, depth: int) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    for node in as_dicts(value):
        nested = as_dicts(node.get("offers")) if depth < 3 else []
        priced = any(node.get(k) not in (None, "") for k in ("price", "lowPrice",
                                                             "priceSpecification"))
        # an AggregateOffer's offers, or an offer without a price wrapping the priced one
        # (eBay nests Offer > offers > Offer)
        if nested and (is_type(node, "AggregateOffer") or not priced):
            found.extend(_flat_offers(nested, depth + 1))
        else:
            found.append(node)
    return found


def _offer(node: dict[str, Any], index: int, count: int, hint: str | None) -> Offer | None:
    currency_hint = _scalar(node.get("priceCurrency")) or hint
    current, currency = _money(node.get("price") or node.get("lowPrice"), currency_hint)
    regular, spec_current, spec_currency = _specifications(
        node.get("priceSpecification"), currency_hint
    )
    current = current if current is not None else spec_current
    if current is None and regular is None:
        return None
    option = _scalar(node.get("name")) or _scalar(node.get("sku"))
    return make_offer(
        option or ("default" if count == 1 else f"offer {index + 1}"),
        regular=regular,
        current=current,
        # a priceCurrency that is no ISO 4217 code ("UAN") names no currency: the page's
        # own symbol or its territory decides later
        currency=currency or spec_currency or resolve((currency_hint or "").strip().upper()),
        availability=to_availability(node.get("availability")),
        quantity=_quantity(node.get("inventoryLevel")),
    )


def _money(value: Any, hint: str | None) -> tuple[Decimal | None, str | None]:
    money = parse_price(
        _scalar(value) if not isinstance(value, Decimal) else value, hint, structured=True
    )
    return (money.amount, money.currency) if money else (None, None)


def _specifications(
    value: Any, hint: str | None
) -> tuple[Decimal | None, Decimal | None, str | None]:
    """(regular price, current price, currency) from `priceSpecification`s."""
    regular = current = currency = None
    for spec in as_dicts(value):
        if _least_quantity(spec) is not None:
            continue  # a quantity tier: an offer of its own (`_tiers`)
        spec_hint = _scalar(spec.get("priceCurrency")) or hint
        amount, found_currency = _money(spec.get("price"), spec_hint)
        kind = (_scalar(spec.get("priceType")) or "").rsplit("/", 1)[-1].lower()
        if kind in _REGULAR_TYPES:
            regular = amount if regular is None else regular
        elif current is None:
            current = amount
        currency = currency or found_currency
    return regular, current, currency


def _quantity(value: Any) -> int | None:
    node = value if isinstance(value, dict) else {"value": value}
    amount = _money(node.get("value"), None)[0]
    return int(amount) if amount is not None and amount == amount.to_integral_value() else None
