"""Helpers shared by the dispensary menu adapters (Dutchie Plus, Sweed, Dispense, Jane, Weedmaps).

Menu platforms differ in where the product list sits and what they call the
regular and discounted price, but every one of them ends in the same steps:
find a list of product dicts, read money fields leniently, turn each
purchasable option into an `Offer`, and summarise stock. Those steps live here
so each platform module only states its field names.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from decimal import ROUND_HALF_UP, Decimal
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from domain.values import CrawlTask, Observation, Offer
from workers.extraction.adapters.base import ExtractionError, Page
from workers.extraction.adapters.offers import make_offer, overall_availability
from workers.extraction.adapters.payload import as_dicts, load_json, text
from workers.extraction.prices import parse_amount

__all__ = [
    "CENT",
    "counts",
    "currency_for",
    "dig",
    "first_list",
    "menu_observation",
    "menu_offer",
    "money",
    "percent_off",
    "quantity",
    "read_products",
    "stock_word",
    "total_quantity",
    "variant_entries",
    "with_query",
]

CENT = Decimal("0.01")


def dig(data: Any, *path: str) -> Any:
    """`data[path[0]][path[1]]...`, or None as soon as a step is not a dict key."""
    for key in path:
        if not isinstance(data, dict):
            return None
        data = data.get(key)
    return data


def first_list(data: Any, paths: Sequence[tuple[str, ...]]) -> list[dict[str, Any]] | None:
    """The product dicts of a payload: the payload itself when it is a list, else the
    first of `paths` that leads to a list, else the same paths inside one envelope
    (a saved response is often wrapped: `{"timestamp", "store_id", "products": {...}}`);
    None when none does."""
    if isinstance(data, list):
        return as_dicts(data)
    found = _at_paths(data, paths)
    if found is None and isinstance(data, dict):
        inner = (_at_paths(value, paths) for value in data.values() if isinstance(value, dict))
        found = next((products for products in inner if products is not None), None)
    return found


def _at_paths(data: Any, paths: Sequence[tuple[str, ...]]) -> list[dict[str, Any]] | None:
    for path in paths:
        found = dig(data, *path)
        if isinstance(found, list):
            return as_dicts(found)
    return None


def read_products(page: Page, paths: Sequence[tuple[str, ...]], what: str) -> tuple[Any, list[dict[str, Any]]]:
    """(the whole payload, its product dicts); ExtractionError naming `what` when it has none."""
    data = load_json(page)
    products = first_list(data, paths)
    if products is None:
        raise ExtractionError(f"{page.url}: not a {what}")
    return data, products


def variant_entries(products: list[dict[str, Any]] | None) -> list[dict[str, Any]]:
    """The `variants` of the first product that has any (what `detects` inspects)."""
    for product in products or ():
        variants = as_dicts(product.get("variants"))
        if variants:
            return variants
    return []


def money(value: Any) -> Decimal | None:
    """A price field as a positive amount; 0, null and junk are "no price"."""
    if isinstance(value, dict):
        value = value.get("amount")
    amount = parse_amount(value, structured=True)
    return amount if amount is not None and amount > 0 else None


def quantity(value: Any) -> int | None:
    """A stock count given as a number or a numeric string; None when absent."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, Decimal)):
        return int(value)
    found = text(value)
    if found and found.lstrip("-").isdigit():
        return int(found)
    return None


def stock_word(count: int | None) -> str | None:
    if count is None:
        return None
    return "in_stock" if count > 0 else "out_of_stock"


def menu_offer(
    option: str | None,
    regular: Decimal | None,
    special: Decimal | None,
    currency: str,
    *,
    count: int | None = None,
    pricing_type: str = "regular",
) -> Offer:
    """One purchasable option: `special` (the discounted price) counts only below `regular`."""
    current = special if special is not None and (regular is None or special < regular) else None
    return make_offer(
        option or "default",
        regular=regular,
        current=current if current is not None else regular,
        currency=currency,
        availability=stock_word(count),
        quantity=count,
        pricing_type=pricing_type,
    )


def menu_observation(
    product_id: str, name: str, offers: tuple[Offer, ...], *, stock: int | None = None, **fields: Any
) -> Observation:
    """A product with its offers; availability follows from the offers', and so does the
    stock unless the product states its own (`stock`)."""
    return Observation(
        provider_product_id=product_id,
        name=name,
        offers=offers,
        availability=overall_availability(offers),
        quantity=stock if stock is not None else total_quantity(offer.quantity for offer in offers),
        **fields,
    )


def currency_for(task: CrawlTask, *found: Any) -> str:
    """The payload's currency code if it states one, else the task's, else USD."""
    for value in found:
        code = text(value)
        if code and len(code) == 3 and code.isalpha():
            return code.upper()
    return (task.currency or "USD").upper()


def total_quantity(counts: Iterable[int | None]) -> int | None:
    known = [count for count in counts if count is not None]
    return sum(max(count, 0) for count in known) if known else None


def percent_off(regular: Decimal, percent: Decimal) -> Decimal:
    """`regular` less `percent` %, to the cent (half up, as tills round)."""
    return (regular * (Decimal(100) - percent) / Decimal(100)).quantize(CENT, ROUND_HALF_UP)


def counts(*values: Any) -> tuple[int, ...] | None:
    """The values when every one is an int (paging fields), else None."""
    if all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        return tuple(values)
    return None


def with_query(url: str, **params: str) -> str:
    """`url` with `params` set in its query string (other parameters kept)."""
    parts = urlsplit(url)
    query = dict(parse_qsl(parts.query))
    query.update(params)
    return urlunsplit(parts._replace(query=urlencode(query)))
