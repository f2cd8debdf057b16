"""WooCommerce Store API, `/wp-json/wc/store/v1/products` (a JSON array).

Prices come as strings in minor units (`"1999"` with `currency_minor_unit: 2`
is 19.99), so they are scaled exactly with `Decimal.scaleb`, never divided
as floats.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any
from urllib.parse import parse_qs, urlsplit

from domain.values import CrawlTask, Observation, Offer
from workers.extraction.adapters.base import Extraction, ExtractionError, Page, Request
from workers.extraction.adapters.offers import make_offer
from workers.extraction.adapters.payload import as_dicts, first_text, load_json, sniff_json, text
from workers.extraction.availability import from_flag

__all__ = ["WooCommerceAdapter", "store_base"]

API_PATH = "/wp-json/wc/store/v1/products"
PER_PAGE = 100


def store_base(url: str) -> str:
    """The shop root for a task URL (the root itself or any `/wp-json/...` URL)."""
    parts = urlsplit(url)
    path = parts.path.split("/wp-json", 1)[0].rstrip("/")
    return f"{parts.scheme}://{parts.netloc}{path}"


class WooCommerceAdapter:
    name = "woocommerce"
    version = "woocommerce/1"

    def detects(self, page: Page) -> bool:
        data = sniff_json(page)
        if not isinstance(data, list):
            return False
        items = as_dicts(data)
        if not items:
            return not data and "/wc/store" in urlsplit(page.url).path
        prices = items[0].get("prices")
        return isinstance(prices, dict) and "currency_minor_unit" in prices

    def start(self, task: CrawlTask) -> Request:
        return _page_request(store_base(task.url), PER_PAGE, 1)

    def extract(self, page: Page, task: CrawlTask) -> Extraction:
        data = load_json(page)
        if not isinstance(data, list):
            raise ExtractionError(f"{page.url}: not a WooCommerce Store API product list")
        observations = tuple(_observation(item, task.currency) for item in as_dicts(data))
        number, per_page = _page_position(page.url)
        more = len(data) >= per_page
        base = store_base(task.url or page.url)
        return Extraction(
            observations=tuple(obs for obs in observations if obs),
            next_request=_page_request(base, per_page, number + 1) if more else None,
        )


def _page_request(base: str, per_page: int, number: int) -> Request:
    return Request(f"{base}{API_PATH}?page={number}&per_page={per_page}")


def _page_position(url: str) -> tuple[int, int]:
    query = parse_qs(urlsplit(url).query)
    try:
        number = int(query.get("page", ["1"])[0])
        per_page = int(query.get("per_page", [str(PER_PAGE)])[0])
    except ValueError:
        return 1, PER_PAGE
    return max(number, 1), max(per_page, 1)


def _observation(item: dict[str, Any], currency_hint: str | None) -> Observation | None:
    product_id, name = text(item.get("id")), text(item.get("name"))
    if not product_id or not name:
        return None
    in_stock = item.get("is_in_stock")
    availability = from_flag(in_stock if isinstance(in_stock, bool) else None)
    offer = _offer(item.get("prices"), currency_hint, availability)
    return Observation(
        provider_product_id=product_id,
        name=name,
        offers=(offer,) if offer else (),
        availability=availability,
        brand=first_text(*(brand.get("name") for brand in as_dicts(item.get("brands")))),
        category=first_text(*(cat.get("name") for cat in as_dicts(item.get("categories")))),
        url=text(item.get("permalink")),
        image_url=first_text(*(image.get("src") for image in as_dicts(item.get("images")))),
        sku=text(item.get("sku")),
    )


def _offer(prices: Any, currency_hint: str | None, availability: str) -> Offer | None:
    if not isinstance(prices, dict):
        return None
    unit = prices.get("currency_minor_unit", 2)
    unit = unit if isinstance(unit, int) and 0 <= unit <= 6 else 2
    current = _minor(prices.get("price"), unit)
    regular = _minor(prices.get("regular_price"), unit)
    sale = _minor(prices.get("sale_price"), unit)
    if current is None and regular is None:
        return None
    currency = text(prices.get("currency_code")) or currency_hint or "USD"
    return make_offer(
        "default",
        regular=regular,
        current=sale if sale is not None and current is None else current,
        currency=currency.upper(),
        availability=availability,
    )


def _minor(value: Any, unit: int) -> Decimal | None:
    raw = text(value)
    if raw is None:
        return None
    try:
        amount = Decimal(raw).scaleb(-unit)
    except ArithmeticError:  # InvalidOperation, or Overflow on absurd exponents
        return None
    return amount if amount.is_finite() and amount >= 0 else None
