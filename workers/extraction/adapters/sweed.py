"""Sweed POS menus: `Products/GetProductList` responses (or their products saved as a list).

The API is POSTed `{"page", "pageSize", ...}` and answers `{"page", "pageSize",
"total", "list": [...]}`; the next page repeats the request with `page` + 1.

A product's `variants` are its sizes: each has a `name` ("3.5g",
"10mg ea | 10-Pack"), a `price`, a `promoPrice` (null unless a promotion
applies; then it is what the customer pays), `availableQty` and a `unitSize`.
"""

from __future__ import annotations

from typing import Any

from domain.values import CrawlTask, Observation, Offer
from workers.extraction.adapters import menu_common as menu
from workers.extraction.adapters.base import Extraction, Page, Request
from workers.extraction.adapters.payload import as_dicts, as_list, first_text, sniff_json, text

__all__ = ["SweedAdapter"]

_PATHS = (("list",), ("data", "list"), ("products",), ("data", "products"))


class SweedAdapter:
    name = "sweed"
    version = "sweed/1"

    def detects(self, page: Page) -> bool:
        variants = menu.variant_entries(menu.first_list(sniff_json(page), _PATHS))
        if not variants:
            return False
        first = variants[0]
        return "promoPrice" in first or ("availableQty" in first and "unitSize" in first)

    def start(self, task: CrawlTask) -> Request:
        return Request(task.url)

    def extract(self, page: Page, task: CrawlTask) -> Extraction:
        data, products = menu.read_products(page, _PATHS, "Sweed product list")
        currency = menu.currency_for(task)
        return Extraction(
            observations=tuple(obs for p in products if (obs := _read(p, currency))),
            next_request=_next(page, data, len(products)),
        )


def _next(page: Page, data: Any, count: int) -> Request | None:
    """The next page of a POSTed `GetProductList` whose envelope says more remain."""
    request = page.request
    body = dict(request.json) if request and request.json else None
    paging = menu.counts(*(menu.dig(data, key) for key in ("page", "pageSize", "total")))
    if request is None or body is None or paging is None or count == 0 or paging[0] * paging[1] >= paging[2]:
        return None
    body["page"] = paging[0] + 1
    return Request(request.url, method=request.method, json=body, headers=request.headers)


def _read(product: dict[str, Any], currency: str) -> Observation | None:
    product_id, name = text(product.get("id")), text(product.get("name"))
    if not product_id or not name:
        return None
    offers = tuple(
        offer for v in as_dicts(product.get("variants")) if (offer := _offer(v, currency))
    )
    images = as_list(product.get("images"))
    return menu.menu_observation(
        product_id,
        name,
        offers,
        brand=text(menu.dig(product, "brand", "name")),
        category=text(menu.dig(product, "category", "name")),
        image_url=text(images[0]) if images else None,
        sku=first_text(*(v.get("sku") for v in as_dicts(product.get("variants")))),
        attributes=_attributes(product),
    )


def _offer(variant: dict[str, Any], currency: str) -> Offer | None:
    regular = menu.money(variant.get("price"))
    if regular is None:
        return None
    return menu.menu_offer(
        first_text(variant.get("name"), _unit_size(variant)),
        regular,
        menu.money(variant.get("promoPrice")),
        currency,
        count=menu.quantity(variant.get("availableQty")),
    )


def _unit_size(variant: dict[str, Any]) -> str | None:
    value, unit = text(menu.dig(variant, "unitSize", "value")), text(menu.dig(variant, "unitSize", "unitAbbr"))
    return f"{value}{unit.lower()}" if value and unit else None


def _attributes(product: dict[str, Any]) -> dict[str, str]:
    found = {
        "subcategory": text(menu.dig(product, "subcategory", "name")),
        "strain_type": text(menu.dig(product, "strain", "prevalence", "name")),
        "product_type": text(menu.dig(product, "productType", "name")),
    }
    return {key: value for key, value in found.items() if value}
