"""Dispensary menus served by a GraphQL API (`FilteredProducts`), paginated
in the POST body (`page`, `perPage`).

Each product carries parallel arrays: option labels (`Options`) aligned with
prices (`recPrices`/`Prices`, `medicalPrices`) and specials (`recSpecialPrices`,
`medicalSpecialPrices`, where null or 0 means "no special"); each menu's prices are
offers of their own (pricing type `rec` or `medical`). Stock comes from the
point-of-sale children, matched to options by label.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from domain.values import CrawlTask, Observation, Offer
from workers.extraction.adapters.base import Extraction, ExtractionError, Page, Request
from workers.extraction.adapters.dispensary_query import PER_PAGE, products_body
from workers.extraction.adapters.dispensary_resolver import DispensaryResolver
from workers.extraction.adapters.offers import make_offer
from workers.extraction.adapters.payload import as_dicts, as_list, first_text, load_json, sniff_json, text
from workers.extraction.prices import parse_amount

__all__ = ["DispensaryAdapter"]

_UNITS = {"PERCENTAGE": "%", "MILLIGRAMS": "mg", "MILLIGRAMS_PER_GRAM": "mg/g"}


class DispensaryAdapter:
    name = "dispensary"
    version = "dispensary/1"

    def __init__(self) -> None:
        self._resolver = DispensaryResolver()

    def detects(self, page: Page) -> bool:
        data = sniff_json(page)
        return isinstance(_listing(data), dict)

    def start(self, task: CrawlTask) -> Request:
        if task.kind == "entry_point":
            return self._resolver.start(task)
        if not task.platform_store_id:
            raise ExtractionError(f"{task.url}: dispensary catalog task has no platform_store_id")
        return _products_request(task.url, task.platform_store_id, 0, PER_PAGE)

    def extract(self, page: Page, task: CrawlTask) -> Extraction:
        data = load_json(page)
        if task.kind == "entry_point" or self._resolver.detects(page):
            return self._resolver.extract(page, task)
        listing = _listing(data)
        if not isinstance(listing, dict):
            raise ExtractionError(f"{page.url}: not a FilteredProducts response{_errors(data)}")
        products = as_dicts(listing.get("products"))
        currency = (task.currency or "USD").upper()
        observations = tuple(obs for p in products if (obs := _observation(p, currency)))
        return Extraction(observations=observations, next_request=_next(page, task, listing))


def _listing(data: Any) -> Any:
    if isinstance(data, dict) and isinstance(data.get("data"), dict):
        return data["data"].get("filteredProducts")
    return None


def _errors(data: Any) -> str:
    messages = (
        [e.get("message") for e in as_dicts(data.get("errors"))] if isinstance(data, dict) else []
    )
    return f": {'; '.join(map(str, messages))}" if messages else ""


def _products_request(url: str, store_id: str, page: int, per_page: int) -> Request:
    return Request(url, method="POST", json=products_body(store_id, page, per_page))


def _position(page: Page) -> tuple[int, int, str | None]:
    """(page number, perPage, dispensary id) of the request that fetched `page`."""
    body = page.request.json if page.request and page.request.json else {}
    found = body.get("variables")
    variables: dict[str, Any] = found if isinstance(found, dict) else {}
    number, per_page = variables.get("page", 0), variables.get("perPage", PER_PAGE)
    store_filter = variables.get("productsFilter")
    store_id = text(store_filter.get("dispensaryId")) if isinstance(store_filter, dict) else None
    number = number if isinstance(number, int) and number >= 0 else 0
    per_page = per_page if isinstance(per_page, int) and per_page > 0 else PER_PAGE
    return number, per_page, store_id


def _next(page: Page, task: CrawlTask, listing: dict[str, Any]) -> Request | None:
    number, per_page, store_id = _position(page)
    store_id = store_id or task.platform_store_id
    found = listing.get("queryInfo")
    info: dict[str, Any] = found if isinstance(found, dict) else {}
    total_pages, total_count = info.get("totalPages"), info.get("totalCount")
    if len(as_list(listing.get("products"))) < per_page or not store_id:
        return None
    if isinstance(total_pages, int) and number + 1 >= total_pages:
        return None
    if isinstance(total_count, int) and (number + 1) * per_page >= total_count:
        return None
    url = page.request.url if page.request else (task.url or page.url)
    return _products_request(url, store_id, number + 1, per_page)


def _observation(item: dict[str, Any], currency: str) -> Observation | None:
    product_id = first_text(item.get("_id"), item.get("id"))
    name = text(item.get("Name"))
    if not product_id or not name:
        return None
    stock = _stock_by_option(item)
    offers = _offers(item, currency, stock)
    brand = item.get("brand")
    return Observation(
        provider_product_id=product_id,
        name=name,
        offers=offers,
        availability=_availability(item, stock),
        brand=first_text(
            item.get("brandName"), brand.get("name") if isinstance(brand, dict) else None
        ),
        category=text(item.get("type")),
        image_url=text(item.get("Image")),
        quantity=sum(stock.values()) if stock else None,
        attributes=_attributes(item),
    )


def _stock_by_option(item: dict[str, Any]) -> dict[str, int]:
    meta = item.get("POSMetaData")
    children = as_dicts(meta.get("children")) if isinstance(meta, dict) else []
    stock: dict[str, int] = {}
    for child in children:
        option = text(child.get("option")) or "default"
        count = child.get("quantityAvailable", child.get("quantity"))
        count = (
            int(count) if isinstance(count, (int, Decimal)) and not isinstance(count, bool) else 0
        )
        stock[option] = stock.get(option, 0) + max(count, 0)
    return stock


def _availability(item: dict[str, Any], stock: dict[str, int]) -> str:
    if stock:
        return "in_stock" if any(count > 0 for count in stock.values()) else "out_of_stock"
    return "in_stock" if text(item.get("Status")) == "Active" else "out_of_stock"


def _offers(item: dict[str, Any], currency: str, stock: dict[str, int]) -> tuple[Offer, ...]:
    """One offer per option and menu it is priced on: recreational (`recPrices`, or
    `Prices`) first, then medical (`medicalPrices`), each at its own special."""
    options = as_list(item.get("Options")) or as_list(item.get("rawOptions"))
    menus = [(as_list(item.get("recPrices")) or as_list(item.get("Prices")),
              as_list(item.get("recSpecialPrices")), "rec"),
             (as_list(item.get("medicalPrices")), as_list(item.get("medicalSpecialPrices")),
              "medical")]
    offers = []
    for prices, specials, kind in menus:
        for index, raw_price in enumerate(prices):
            option = (text(options[index]) if index < len(options) else None) or "default"
            special = parse_amount(specials[index], structured=True) \
                if index < len(specials) else None
            regular = parse_amount(raw_price, structured=True)
            if regular is None and not special:
                continue
            count = stock.get(option)
            offers.append(make_offer(option, regular=regular, current=special or regular,
                                     currency=currency, availability=_stock_word(count),
                                     quantity=count, pricing_type=kind))
    return tuple(offers)


def _stock_word(count: int | None) -> str | None:
    if count is None:
        return None
    return "in_stock" if count > 0 else "out_of_stock"


def _attributes(item: dict[str, Any]) -> dict[str, str]:
    found = {
        "strain_type": text(item.get("strainType")),
        "subcategory": text(item.get("subcategory")),
        "thc": _potency(item.get("THCContent")),
        "cbd": _potency(item.get("CBDContent")),
    }
    return {key: value for key, value in found.items() if value}


def _potency(content: Any) -> str | None:
    if not isinstance(content, dict):
        return None
    values = [text(v) for v in as_list(content.get("range")) if text(v)]
    if not values:
        return None
    unit = _UNITS.get(str(content.get("unit") or "").upper(), "")
    low, high = values[0], values[-1]
    return f"{low}{unit}" if low == high else f"{low}-{high}{unit}"
