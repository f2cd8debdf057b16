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
from workers.adapters.base import Extraction, ExtractionError, Page, Request
from workers.adapters.menu_common import (
    currency_for,
    dig,
    first_list,
    menu_offer,
    money,
    quantity,
    total_quantity,
    variant_entries,
)
from workers.adapters.offers import overall_availability
from workers.adapters.payload import as_dicts, as_list, first_text, load_json, sniff_json, text

__all__ = ["SweedAdapter"]

_PATHS = (("list",), ("data", "list"), ("products",), ("data", "products"))


class SweedAdapter:
    name = "sweed"
    version = "sweed/1"

    def detects(self, page: Page) -> bool:
        variants = variant_entries(first_list(sniff_json(page), _PATHS))
        if not variants:
            return False
        first = variants[0]
        return "promoPrice" in first or ("availableQty" in first and "unitSize" in first)

    def start(self, task: CrawlTask) -> Request:
        return Request(task.url)

    def extract(self, page: Page, task: CrawlTask) -> Extraction:
        data = load_json(page)
        products = first_list(data, _PATHS)
        if products is None:
            raise ExtractionError(f"{page.url}: not a Sweed product list")
        currency = currency_for(task)
        return Extraction(
            observations=tuple(obs for p in products if (obs := _read(p, currency))),
            next_request=_next(page, data, len(products)),
        )


def _next(page: Page, data: Any, count: int) -> Request | None:
    """The next page of a POSTed `GetProductList` whose envelope says more remain."""
    request = page.request
    body = dict(request.json) if request and request.json else None
    number, size, total = (dig(data, key) for key in ("page", "pageSize", "total"))
    ints = all(isinstance(v, int) and not isinstance(v, bool) for v in (number, size, total))
    if request is None or body is None or not ints or count == 0 or number * size >= total:
        return None
    body["page"] = number + 1
    return Request(request.url, method=request.method, json=body, headers=request.headers)


def _read(product: dict[str, Any], currency: str) -> Observation | None:
    product_id, name = text(product.get("id")), text(product.get("name"))
    if not product_id or not name:
        return None
    offers = tuple(
        offer for v in as_dicts(product.get("variants")) if (offer := _offer(v, currency))
    )
    images = as_list(product.get("images"))
    return Observation(
        provider_product_id=product_id,
        name=name,
        offers=offers,
        availability=overall_availability(offers),
        brand=text(dig(product, "brand", "name")),
        category=text(dig(product, "category", "name")),
        image_url=text(images[0]) if images else None,
        sku=first_text(*(v.get("sku") for v in as_dicts(product.get("variants")))),
        quantity=total_quantity(offer.quantity for offer in offers),
        attributes=_attributes(product),
    )


def _offer(variant: dict[str, Any], currency: str) -> Offer | None:
    regular = money(variant.get("price"))
    if regular is None:
        return None
    return menu_offer(
        first_text(variant.get("name"), _unit_size(variant)),
        regular,
        money(variant.get("promoPrice")),
        currency,
        count=quantity(variant.get("availableQty")),
    )


def _unit_size(variant: dict[str, Any]) -> str | None:
    value, unit = text(dig(variant, "unitSize", "value")), text(dig(variant, "unitSize", "unitAbbr"))
    return f"{value}{unit.lower()}" if value and unit else None


def _attributes(product: dict[str, Any]) -> dict[str, str]:
    found = {
        "subcategory": text(dig(product, "subcategory", "name")),
        "strain_type": text(dig(product, "strain", "prevalence", "name")),
        "product_type": text(dig(product, "productType", "name")),
    }
    return {key: value for key, value in found.items() if value}
