"""Dispense menus (dispenseapp.com venues): product lists with discounts applied.

`GET /products?venueId=...&skip=&limit=` answers `{"count", "skip", "limit",
"data": [...]}`; saved menus may be the bare list.

Every product carries its list `price` and `priceWithDiscounts` (what the
customer pays once the venue's discounts apply), `quantity` in stock, and its
size as `weightFormatted` ("3.5g", "100mg"). A product sold in several sizes
lists the other sizes as `variants`, each itself a full product record (the
product may list itself among them); each distinct record is one option.
"""

from __future__ import annotations

from typing import Any

from domain.values import CrawlTask, Observation, Offer
from workers.extraction.adapters import menu_common as menu
from workers.extraction.adapters.base import Extraction, Page, Request
from workers.extraction.adapters.payload import as_dicts, first_text, sniff_json, text

__all__ = ["DispenseAdapter"]

_PATHS = (("data",), ("products",), ("data", "products"))


class DispenseAdapter:
    name = "dispense"
    version = "dispense/1"

    def detects(self, page: Page) -> bool:
        products = menu.first_list(sniff_json(page), _PATHS)
        if not products:
            return False
        first = products[0]
        return "priceWithDiscounts" in first or (
            "venue" in first and "productCategoryName" in first
        )

    def start(self, task: CrawlTask) -> Request:
        return Request(task.url)

    def extract(self, page: Page, task: CrawlTask) -> Extraction:
        data, products = menu.read_products(page, _PATHS, "Dispense product list")
        currency = menu.currency_for(task)
        return Extraction(
            observations=tuple(obs for p in products if (obs := _read(p, currency))),
            next_request=_next(page, data, len(products)),
        )


def _next(page: Page, data: Any, count: int) -> Request | None:
    """The next `skip` of a `{"count", "skip", "limit", "data"}` page, if any remain."""
    paging = menu.counts(*(menu.dig(data, key) for key in ("count", "skip", "limit")))
    if paging is None or count == 0 or paging[1] + count >= paging[0]:
        return None
    _, skip, limit = paging
    return Request(menu.with_query(page.url, skip=str(skip + count), limit=str(limit)))


def _read(product: dict[str, Any], currency: str) -> Observation | None:
    product_id = first_text(product.get("id"), product.get("_id"))
    name = text(product.get("name"))
    if not product_id or not name:
        return None
    offers = _offers(product, currency)
    return menu.menu_observation(
        product_id,
        name,
        offers,
        brand=text(menu.dig(product, "brand", "name")),
        category=first_text(product.get("productCategoryName"), product.get("subType")),
        url=text(product.get("productUrl")),
        image_url=text(product.get("image")),
        sku=text(product.get("sku")),
        attributes=_attributes(product),
    )


def _offers(product: dict[str, Any], currency: str) -> tuple[Offer, ...]:
    """One offer per distinct size: the product's own and its variants', each id once."""
    sizes = [product, *(v for v in as_dicts(product.get("variants")) if "price" in v)]
    offers: list[Offer] = []
    seen: set[str] = set()
    for size in sizes:
        key = first_text(size.get("id"), size.get("_id")) or str(len(seen))
        regular = menu.money(size.get("price"))
        if key in seen or regular is None:
            continue
        seen.add(key)
        offers.append(
            menu.menu_offer(
                first_text(size.get("weightFormatted"), size.get("size")),
                regular,
                menu.money(size.get("priceWithDiscounts")),
                currency,
                count=menu.quantity(size.get("quantity")),
            )
        )
    return tuple(offers)


def _attributes(product: dict[str, Any]) -> dict[str, str]:
    found = {
        "strain_type": first_text(product.get("cannabisStrain"), product.get("cannabisType")),
        "thc": _lab(product, "thc"),
        "cbd": _lab(product, "cbd"),
    }
    return {key: value for key, value in found.items() if value}


def _lab(product: dict[str, Any], compound: str) -> str | None:
    value = menu.money(menu.dig(product, "labs", compound))
    unit = text(menu.dig(product, "labs", f"{compound}ContentUnit")) or ""
    return f"{value}{unit}" if value is not None else None
