"""The generic menu reader: products from a JSON menu payload of any platform.

Used when no platform adapter recognises a JSON payload (and by the bench as a
cross-check of the adapters, which stay the precise readers of the platforms they know).
It walks the document (`json_walk`: bounded in depth, nodes and time) for the outermost
arrays of product-like objects — wherever they sit: `{"data": {"menu": {"products":
[…]}}}`, GraphQL `edges[].node`, JSON:API `data[].attributes`, a JSON string inside
the JSON — where an object is product-like when it has a name (`name`, `title`,
`productName`, …) and at least one price (`menu_options`). Each product's options
become offers at their effective price (the special when it is lower). Integer prices
are taken as cents when their field says so (`priceInCents`) or, over a whole product
list, when every price is a whole number and their median is 1000 or more.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from decimal import Decimal
from itertools import islice
from typing import Any

from domain.values import CrawlTask, Observation, Offer
from workers.extraction.adapters import menu_fields as f
from workers.extraction.adapters.base import Extraction, ExtractionError, Page, Request
from workers.extraction.adapters.json_walk import Budget, find_records, load, named_currency
from workers.extraction.adapters.menu_common import menu_observation
from workers.extraction.adapters.menu_options import RawOffer, read_options
from workers.extraction.adapters.menu_shapes import MIN_SHARE, infer_records, percent_off
from workers.extraction.adapters.offers import make_offer
from workers.extraction.adapters.payload import first_text
from workers.extraction.currency import minor_units

__all__ = ["CrossCheck", "GenericMenuAdapter", "cross_check", "read_menu"]

#: a median whole-number price at or above this, with no fractional price, means cents
CENTS_MEDIAN = 1000
#: products that must all carry one size-shaped value for it to be the menu's, not theirs
SAME_SIZE_PRODUCTS = 5
_IDS = ("id", "product id", "uuid", "object id", "pos id", "sku", "slug")
_BRANDS = ("brand", "brand name", "vendor", "manufacturer", "producer")
_CATEGORIES = ("category", "category name", "kind", "product type")


def read_menu(data: Any, currency: str = "USD", budget: Budget | None = None
              ) -> tuple[Observation, ...]:
    """The products of a parsed JSON payload; () when it holds none (or is hostile)."""
    read: dict[int, list[RawOffer]] = {}  # the options product_record read, by record
    found = find_records(data, lambda item: product_record(item, read, currency), budget,
                         infer=infer_records)
    codes = [named_currency(item.record) or item.currency or currency for item in found]
    offers = _one_size_everywhere(
        _specials_by_column(_in_units([read[id(item.record)] for item in found], codes)))
    observations: dict[tuple[str, str, tuple[Offer, ...]], Observation] = {}
    for item, options, code in zip(found, offers, codes, strict=True):
        obs = _observation(item.record, options, code)  # one product listed twice at one price
        observations.setdefault((obs.provider_product_id, obs.name, obs.offers), obs)
    return tuple(observations.values())


def product_record(item: Any, read: dict[int, list[RawOffer]] | None = None,
                   currency: str | None = None) -> dict[str, Any] | None:
    """The item as a product record: itself when it has a name and a price, else the
    first object it wraps that has (its own scalar fields kept beside), else None. The
    options read are kept in `read`, by the record's id."""
    if not isinstance(item, dict):
        return None
    for candidate in (item, *(c for _, c in islice(item.items(), f.MAX_KEYS) if isinstance(c, dict))):
        found = read_options(candidate, currency) if _name(candidate) else []
        if found:
            record = candidate if candidate is item else {**_scalars(item), **candidate}
            if read is not None:
                read[id(record)] = found
            return record
    return None


def _scalars(item: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in islice(item.items(), f.MAX_KEYS) if not isinstance(v, (dict, list))}


def _name(record: dict[str, Any]) -> str | None:
    by_words = _by_words(record)
    for wanted in f.NAMES:
        value = by_words.get(wanted)
        if isinstance(value, str) and value.strip() and len(value) <= 300:
            return value
    return None


def _by_words(record: dict[str, Any]) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for key, value in islice(record.items(), f.MAX_KEYS):
        found.setdefault(f.joined(key), value)
    return found


def _in_units(menus: list[list[RawOffer]], codes: list[str]) -> list[list[RawOffer]]:
    """Bare integer prices in minor units when, over the whole menu, they look like it:
    every price a whole number, their median `CENTS_MEDIAN` or more, and a currency that
    has minor units (1500 yen are 1500 yen)."""
    if any(minor_units(code) == 0 for code in codes):
        return menus
    flat = [offer.regular for options in menus for offer in options if offer.regular is not None]
    integral = all(offer.integral for options in menus for offer in options
                   if offer.regular is not None)
    if not flat or not integral or statistics.median(flat) < CENTS_MEDIAN:
        return menus
    return [[offer.scaled(10 ** minor_units(code)) for offer in options]
            for options, code in zip(menus, codes, strict=True)]


def _specials_by_column(menus: list[list[RawOffer]]) -> list[list[RawOffer]]:
    """Specials under keys that say nothing, told apart over the whole menu: an unnamed
    amount is an option's special when, wherever it is set, it is below the price (at
    least `MIN_SHARE` of it) and on most rows a round percentage off it
    (`menu_shapes.percent_off`); stock counts, potencies and per-gram prices are not."""
    pairs: dict[str, list[tuple[Decimal, Decimal]]] = defaultdict(list)
    for options in menus:
        for offer in options:
            if offer.regular is not None:
                for key, amount in offer.unnamed:
                    pairs[key].append((amount, offer.regular))
    specials = {key for key, found in pairs.items()
                if all(MIN_SHARE * price <= amount < price for amount, price in found)
                and percent_off(found)}
    if not specials:
        return menus
    return [[_special_of(offer, specials) for offer in options] for options in menus]


def _one_size_everywhere(menus: list[list[RawOffer]]) -> list[list[RawOffer]]:
    """A size-shaped field of the products themselves with one value on all of them, five
    or more (`SAME_SIZE_PRODUCTS`; `"3.5 grams"` on a salve and a soda alike), says
    something of the menu, not of each product: it labels no price."""
    sizes = [{offer.option for offer in options if offer.sized} for options in menus]
    labelled = [found for found in sizes if found]
    if len(labelled) < SAME_SIZE_PRODUCTS or len(set().union(*labelled)) != 1:
        return menus
    return [[replace(offer, option="default", sized=False) if offer.sized else offer
             for offer in options] for options in menus]


def _special_of(offer: RawOffer, specials: set[str]) -> RawOffer:
    special = next((amount for key, amount in offer.unnamed if key in specials), None)
    return replace(offer, special=special) if special is not None else offer


def _observation(record: dict[str, Any], options: Sequence[RawOffer], code: str) -> Observation:
    by_words = _by_words(record)
    name = _name(record) or ""
    offers = tuple(_offer(option, code) for option in options)
    count, in_stock = f.stock_of(record)
    if in_stock is not None and all(o.availability is None for o in offers):
        offers = tuple(replace(o, availability=_stock_word(None, in_stock)) for o in offers)
    return menu_observation(
        first_text(*(by_words.get(k) for k in _IDS)) or name, name.strip(), offers,
        stock=count, brand=_text_or_name(by_words, _BRANDS),
        category=_text_or_name(by_words, _CATEGORIES))


def _offer(option: RawOffer, currency: str) -> Offer:
    special = option.special
    current = special if special is not None and option.regular is not None \
        and special < option.regular else option.regular
    return make_offer(option.option, regular=option.regular, current=current, currency=currency,
                      availability=_stock_word(option.count, option.in_stock),
                      quantity=option.count, pricing_type=option.pricing_type)


def _stock_word(count: int | None, in_stock: bool | None) -> str | None:
    if count is not None:
        return "in_stock" if count > 0 else "out_of_stock"
    if in_stock is not None:
        return "in_stock" if in_stock else "out_of_stock"
    return None


def _text_or_name(by_words: dict[str, Any], keys: Sequence[str]) -> str | None:
    for key in keys:
        value = by_words.get(key)
        if isinstance(value, dict):
            value = _name(value)
        if isinstance(value, str) and value.strip() and len(value) <= 120:
            return value.strip()
    return None


class GenericMenuAdapter:
    """Reads any JSON menu payload whose platform no other adapter knows."""

    name = "generic-menu"
    version = "generic-menu/1"

    def detects(self, page: Page) -> bool:
        data = load(page.text)
        return data is not None and bool(find_records(data, product_record, first_only=True,
                                                      infer=infer_records))

    def start(self, task: CrawlTask) -> Request:
        return Request(task.url)

    def extract(self, page: Page, task: CrawlTask) -> Extraction:
        data = load(page.text)
        if data is None:
            raise ExtractionError(f"{page.url}: not JSON")
        return Extraction(observations=read_menu(data, (task.currency or "USD").upper()))


@dataclass(frozen=True)
class CrossCheck:
    """How far two readings of one payload agree, option by option (name, option label,
    effective price): `agreed` found by both, the others by one only."""

    agreed: int
    adapter_only: int
    generic_only: int

    def line(self) -> str:
        return (f"generic menu reader agrees on {self.agreed} of "
                f"{self.agreed + self.adapter_only} options "
                f"({self.generic_only} more of its own)")


def cross_check(adapter: Iterable[Observation], generic: Iterable[Observation]) -> CrossCheck:
    """Compare a platform adapter's products with the generic reader's."""
    ours, theirs = _paid_options(adapter), _paid_options(generic)
    return CrossCheck(len(ours & theirs), len(ours - theirs), len(theirs - ours))


def _paid_options(observations: Iterable[Observation]) -> set[tuple[str, str, Decimal]]:
    found = set()
    for obs in observations:
        for offer in obs.offers:
            paid = offer.special_price if offer.special_price is not None else offer.price
            if paid is not None:
                found.add((" ".join(obs.name.split()).casefold(),
                           "".join(offer.option.split()).casefold(), paid.normalize()))
    return found
