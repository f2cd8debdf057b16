"""Shopify's public catalogue, `/products.json` (one Observation per product,
one Offer per variant), paginated with `?limit=250&page=N`."""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs, urlsplit

from domain.values import CrawlTask, Observation, Offer
from workers.extraction.adapters.base import Extraction, ExtractionError, Page, Request
from workers.extraction.adapters.offers import make_offer, overall_availability
from workers.extraction.adapters.payload import (
    as_dicts,
    first_text,
    load_json,
    plain_text,
    sniff_json,
    text,
)
from workers.extraction.availability import from_flag
from workers.extraction.prices import parse_amount

__all__ = ["ShopifyAdapter", "shop_base"]

LIMIT = 250


def shop_base(url: str) -> str:
    """The shop root for a task URL (the root itself or any `.../products.json`)."""
    parts = urlsplit(url)
    path = parts.path.rstrip("/")
    path = path.removesuffix("/products.json")
    return f"{parts.scheme}://{parts.netloc}{path}"


class ShopifyAdapter:
    name = "shopify"
    version = "shopify/1"

    def detects(self, page: Page) -> bool:
        data = sniff_json(page)
        if not isinstance(data, dict) or not isinstance(data.get("products"), list):
            return False
        products = as_dicts(data["products"])
        if not products:
            return urlsplit(page.url).path.endswith("products.json")
        return "variants" in products[0] and "handle" in products[0]

    def start(self, task: CrawlTask) -> Request:
        return _page_request(shop_base(task.url), LIMIT, 1)

    def extract(self, page: Page, task: CrawlTask) -> Extraction:
        data = load_json(page)
        if not isinstance(data, dict) or not isinstance(data.get("products"), list):
            raise ExtractionError(f"{page.url}: not a Shopify products.json payload")
        base = shop_base(task.url or page.url)
        currency = (task.currency or "USD").upper()
        products = data["products"]
        observations = tuple(
            obs for item in as_dicts(products) if (obs := _observation(item, base, currency))
        )
        number, limit = _page_position(page.url)
        more = len(products) >= limit
        return Extraction(
            observations=observations,
            next_request=_page_request(base, limit, number + 1) if more else None,
        )


def _page_request(base: str, limit: int, number: int) -> Request:
    return Request(f"{base}/products.json?limit={limit}&page={number}")


def _page_position(url: str) -> tuple[int, int]:
    query = parse_qs(urlsplit(url).query)
    try:
        number = int(query.get("page", ["1"])[0])
        limit = int(query.get("limit", [str(LIMIT)])[0])
    except ValueError:
        return 1, LIMIT
    return max(number, 1), max(limit, 1)


def _observation(item: dict[str, Any], base: str, currency: str) -> Observation | None:
    product_id, name = text(item.get("id")), text(item.get("title"))
    if not product_id or not name:
        return None
    variants = as_dicts(item.get("variants"))
    offers = tuple(_offer(variant, currency) for variant in variants)
    handle = text(item.get("handle"))
    images = as_dicts(item.get("images")) or as_dicts(item.get("image"))
    return Observation(
        provider_product_id=product_id,
        name=name,
        offers=offers,
        availability=overall_availability(offers),
        brand=text(item.get("vendor")),
        category=text(item.get("product_type")),
        url=f"{base}/products/{handle}" if handle else None,
        image_url=first_text(*(image.get("src") for image in images)),
        sku=text(variants[0].get("sku")) if len(variants) == 1 else None,
        description=plain_text(item.get("body_html")),
    )


def _offer(variant: dict[str, Any], currency: str) -> Offer:
    title = text(variant.get("title")) or "default"
    available = variant.get("available")
    quantity = variant.get("inventory_quantity")
    return make_offer(
        "default" if title == "Default Title" else title,
        regular=parse_amount(variant.get("compare_at_price"), structured=True),
        current=parse_amount(variant.get("price"), structured=True),
        currency=currency,
        availability=from_flag(available if isinstance(available, bool) else None),
        quantity=quantity if isinstance(quantity, int) and not isinstance(quantity, bool) else None,
    )
