"""Weedmaps dispensary menus: the `menu_items` JSON:API listing.

A crawl of a weedmaps.com listing page starts at the listing's `menu_items`
API (`menu_items_url`) and follows `meta.page`/`per_page`/`total`.

`{"meta": {"page", "per_page", "total"}, "data": [{"type": "menu_item",
"attributes": {...}}]}`. An item is sold either in `variants` (each with a
`label` and `price.amount`) or, on older listings, through the fixed weight
slots of `prices` (`price_gram`, `price_eighth`, ..., 0 meaning "not sold at
this weight"; `price_unit` for things sold by the piece). A `sale` of
`{"type": "percentage", "amount": 30}` takes 30 % off every option; other sale
types take a fixed amount off.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any
from urllib.parse import urlsplit

from domain.values import CrawlTask, Observation, Offer
from workers.extraction.adapters import menu_common as menu
from workers.extraction.adapters.base import Extraction, ExtractionError, Page, Request
from workers.extraction.adapters.payload import as_dicts, first_text, load_json, sniff_json, text

__all__ = ["WeedmapsAdapter", "menu_items_url"]

_API = "https://api-g.weedmaps.com/discovery/v1/listings"
_LISTING_KINDS = ("dispensaries", "deliveries", "doctors")

#: The fixed weight slots of `prices`, in menu order, with the label Weedmaps shows.
_SLOTS = (
    ("price_unit", None),
    ("price_half_gram", "1/2 g"),
    ("price_gram", "1 g"),
    ("price_two_grams", "2 g"),
    ("price_eighth", "1/8 oz"),
    ("price_quarter", "1/4 oz"),
    ("price_half_ounce", "1/2 oz"),
    ("price_ounce", "1 oz"),
)


class WeedmapsAdapter:
    name = "weedmaps"
    version = "weedmaps/1"

    def detects(self, page: Page) -> bool:
        items = _items(sniff_json(page)) or []
        return bool(items) and items[0].get("type") == "menu_item"

    def start(self, task: CrawlTask) -> Request:
        return Request(menu_items_url(task.url))

    def extract(self, page: Page, task: CrawlTask) -> Extraction:
        data = load_json(page)
        items = _items(data)
        if items is None:
            raise ExtractionError(f"{page.url}: not a Weedmaps menu_items response")
        observations = tuple(
            obs for item in items if item.get("type") == "menu_item" and (obs := _read(item, task))
        )
        return Extraction(observations=observations, next_request=_next(page, data, len(items)))


def menu_items_url(url: str) -> str:
    """The first `menu_items` page of a weedmaps.com listing URL
    (`/dispensaries/<slug>`, `/deliveries/<slug>`); any other URL is returned as is."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    segments = [s for s in parts.path.split("/") if s]
    if not (host == "weedmaps.com" or host.endswith(".weedmaps.com")) or host.startswith("api"):
        return url
    if len(segments) < 2 or segments[0] not in _LISTING_KINDS:
        return url
    return f"{_API}/{segments[0]}/{segments[1]}/menu_items?page=1&page_size=100"


def _items(data: Any) -> list[dict[str, Any]] | None:
    found = menu.dig(data, "data")
    return as_dicts(found) if isinstance(found, list) else None


def _next(page: Page, data: Any, count: int) -> Request | None:
    paging = menu.counts(*(menu.dig(data, "meta", key) for key in ("page", "per_page", "total")))
    if paging is None or count == 0 or paging[0] * paging[1] >= paging[2]:
        return None
    number, per_page, _ = paging
    return Request(menu.with_query(page.url, page=str(number + 1), page_size=str(per_page)))


def _read(item: dict[str, Any], task: CrawlTask) -> Observation | None:
    attrs = item.get("attributes")
    if not isinstance(attrs, dict):
        return None
    product_id, name = first_text(item.get("id"), attrs.get("external_id")), text(attrs.get("name"))
    if not product_id or not name:
        return None
    count = menu.quantity(attrs.get("inventory_quantity"))
    offers = _offers(attrs, task, count)
    return menu.menu_observation(
        product_id,
        name,
        offers,
        brand=text(attrs.get("brand_name")),
        category=first_text(attrs.get("category_name"), menu.dig(attrs, "parent_category", "name")),
        url=text(menu.dig(item, "links", "order")),
        image_url=first_text(attrs.get("picture_url"), attrs.get("original_picture_url")),
        sku=text(attrs.get("sku")),
        stock=count,
        attributes=_attributes(attrs),
    )


def _offers(attrs: dict[str, Any], task: CrawlTask, count: int | None) -> tuple[Offer, ...]:
    found = attrs.get("sale")
    sale = found if isinstance(found, dict) else None
    offers = []
    for option, regular, currency, stock in _options(attrs):
        offers.append(
            menu.menu_offer(
                option,
                regular,
                _on_sale(regular, sale),
                menu.currency_for(task, currency),
                count=stock if stock is not None else count,
            )
        )
    return tuple(offers)


def _options(attrs: dict[str, Any]) -> list[tuple[str | None, Decimal | None, Any, int | None]]:
    """(label, regular price, currency, stock) of every option the item is sold in."""
    variants = as_dicts(attrs.get("variants"))
    if variants:
        return [
            (
                first_text(v.get("label"), v.get("name")),
                menu.money(v.get("price")),
                menu.dig(v, "price", "currency"),
                menu.quantity(v.get("inventory_quantity")),
            )
            for v in variants
        ]
    found_prices = attrs.get("prices")
    prices: dict[str, Any] = found_prices if isinstance(found_prices, dict) else {}
    found = [(label, menu.money(prices.get(key)), None, None) for key, label in _SLOTS]
    other = prices.get("prices_other")
    if isinstance(other, dict):
        found.extend((text(label), menu.money(value), None, None) for label, value in other.items())
    return [option for option in found if option[1] is not None]


def _on_sale(regular: Decimal | None, sale: dict[str, Any] | None) -> Decimal | None:
    amount = menu.money(sale.get("amount")) if sale else None
    if regular is None or sale is None or amount is None:
        return None
    if str(sale.get("type") or "").lower() == "percentage":
        return menu.percent_off(regular, amount) if amount < 100 else None
    reduced = regular - amount
    return reduced if reduced > 0 else None


def _attributes(attrs: dict[str, Any]) -> dict[str, str]:
    found = {
        "subcategory": text(menu.dig(attrs, "sub_category", "name")),
        "license_type": text(attrs.get("license_type")),
        "thc": _percent(menu.dig(attrs, "cannabinoids", "thc")),
        "cbd": _percent(menu.dig(attrs, "cannabinoids", "cbd")),
    }
    return {key: value for key, value in found.items() if value}


def _percent(value: Any) -> str | None:
    found = text(value)
    return f"{found}%" if found else None
