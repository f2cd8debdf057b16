"""iHeartJane (Jane) menus: the product records of Jane's Algolia-backed search.

A store's menu (`dmerch.iheartjane.com/v2/smart`, POSTed `{"store_id", "page",
"page_size", "search_attributes": ["*"], ...}`) answers `{"products": [...]}`:
every product of the store as `{"product_id", "object_id", "ad_token", ...}`,
the first `page_size` of them with their record under `search_attributes`, the
others as bare ids. The next page is asked for with `page` + 1 while the ids
listed outnumber the pages asked (saved answers show page 0 only, so what a
later page fills in is inferred). Algolia's own answers (`{"hits": [...]}`)
carry the same records flat; saved menus may be the bare list.

A record names the weights it is sold in (`available_weights`: "half gram",
"gram", "two gram", "eighth ounce", "quarter ounce", "half ounce", "ounce"),
each priced in `price_<weight>` (spaces as underscores); a product sold by the
piece has `price_each`. A special on a weight gives `discounted_price_<weight>`
and `special_price_<weight>` = `{"price", "discount_price", "discount_type",
...}` (`{}` when none). `max_cart_quantity_<weight>` is how many one order may
hold, not stock: records carry no stock count, so offers have no availability.
`kind` is the product type (flower, vape, edible), `category` the strain type.
"""

from __future__ import annotations

from typing import Any

from domain.values import CrawlTask, Observation, Offer
from workers.extraction.adapters import menu_common as menu
from workers.extraction.adapters.base import Extraction, Page, Request
from workers.extraction.adapters.payload import as_dicts, as_list, first_text, plain_text, sniff_json, text

__all__ = ["JaneAdapter"]

_PATHS = (("products",), ("hits",), ("data", "products"))
#: the weights Jane prices, in menu order (read when a record lists no `available_weights`)
_WEIGHTS = ("each", "half gram", "gram", "two gram", "eighth ounce", "quarter ounce", "half ounce", "ounce")


class JaneAdapter:
    name = "jane"
    version = "jane/1"

    def detects(self, page: Page) -> bool:
        record = _first_record(menu.first_list(sniff_json(page), _PATHS))
        return (
            record is not None
            and "available_weights" in record
            and ("product_id" in record or "objectID" in record)
        )

    def start(self, task: CrawlTask) -> Request:
        return Request(task.url)

    def extract(self, page: Page, task: CrawlTask) -> Extraction:
        _, products = menu.read_products(page, _PATHS, "Jane product list")
        currency = menu.currency_for(task)
        records = [record for product in products if (record := _record(product)) is not None]
        return Extraction(
            observations=tuple(obs for record in records if (obs := _read(record, currency))),
            next_request=_next(page, len(products), len(records)),
        )


def _record(product: dict[str, Any]) -> dict[str, Any] | None:
    """The product's record: under `search_attributes` (a menu answer), else the product
    itself when it is one (an Algolia hit); None for a bare id of another page."""
    found = product.get("search_attributes")
    if isinstance(found, dict):
        return found
    return product if "available_weights" in product else None


def _first_record(products: list[dict[str, Any]] | None) -> dict[str, Any] | None:
    return next((record for p in products or () if (record := _record(p)) is not None), None)


def _next(page: Page, listed: int, filled: int) -> Request | None:
    """The next page of a POSTed menu search whose answer lists more products than the
    pages asked so far hold (the answer lists every id, filling in one page of them)."""
    request = page.request
    body = dict(request.json) if request and request.json else None
    paging = menu.counts(*(menu.dig(body, key) for key in ("page", "page_size")))
    if request is None or body is None or paging is None or filled == 0 or paging[1] <= 0:
        return None
    number, size = paging
    if (number + 1) * size >= listed:
        return None
    body["page"] = number + 1
    return Request(request.url, method=request.method, json=body, headers=request.headers)


def _read(record: dict[str, Any], currency: str) -> Observation | None:
    product_id = first_text(record.get("product_id"), record.get("objectID"))
    name = text(record.get("name"))
    if not product_id or not name:
        return None
    return menu.menu_observation(
        product_id,
        name,
        _offers(record, currency),
        brand=text(record.get("brand")),
        category=first_text(record.get("kind"), record.get("custom_product_type")),
        image_url=_image(record),
        attributes=_attributes(record),
        description=plain_text(first_text(record.get("description"), record.get("store_notes"))),
    )


def _offers(record: dict[str, Any], currency: str) -> tuple[Offer, ...]:
    """One offer per weight the record is sold in and prices, at its special when lower."""
    weights = [w for w in map(text, as_list(record.get("available_weights"))) if w]
    if not weights:
        weights = [w for w in _WEIGHTS if _field(record, "price", w) is not None]
    offers = []
    for weight in dict.fromkeys(weights):
        regular = menu.money(_field(record, "price", weight))
        if regular is None:
            continue
        special = menu.money(_field(record, "discounted_price", weight))
        if special is None:
            special = menu.money(menu.dig(_field(record, "special_price", weight), "discount_price"))
        offers.append(menu.menu_offer(weight, regular, special, currency))
    return tuple(offers)


def _field(record: dict[str, Any], prefix: str, weight: str) -> Any:
    return record.get(f"{prefix}_{'_'.join(weight.split())}")


def _image(record: dict[str, Any]) -> str | None:
    photos = as_dicts(record.get("product_photos"))
    return first_text(
        *as_list(record.get("image_urls")),
        *(menu.dig(photo, "urls", "original") for photo in photos),
    )


def _attributes(record: dict[str, Any]) -> dict[str, str]:
    found = {
        "strain_type": text(record.get("category")),
        "subcategory": first_text(
            record.get("kind_subtype"), record.get("root_subtype"), record.get("custom_product_subtype")
        ),
        "thc": _percent(record.get("percent_thc")),
        "cbd": _percent(record.get("percent_cbd")),
        "net_weight": text(record.get("amount")),
        "store_id": text(record.get("store_id")),
    }
    return {key: value for key, value in found.items() if value}


def _percent(value: Any) -> str | None:
    amount = menu.money(value)
    return f"{amount}%" if amount is not None else None
