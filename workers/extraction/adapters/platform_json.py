"""Product data a shop platform embeds in its pages' scripts -> Observation.

Read when a page's schema.org markup names no product, or names one without saying
whether it is in stock (`workers.extraction.adapters.schema_org`):

- Shopify themes: the product JSON (`<script type="application/json"
  data-product-json>` or `id="ProductJson-…"`: title, vendor, type and variants with
  `price`/`compare_at_price` in cents and `available`), else the analytics `var meta =
  {"product": …}` (variants with a price in cents, no stock); the currency from
  `ShopifyAnalytics.meta.currency` or `Shopify.currency`;
- WooCommerce variable products: the `data-product_variations` of the variations form
  (`display_price`, `display_regular_price`, `is_in_stock` per variation).

Nothing here guesses: a field the platform JSON does not carry stays unknown, for the
visible page to fill in.
"""

from __future__ import annotations

import json
import re
from decimal import Decimal
from typing import Any

import lxml.html

from domain.values import Observation, Offer
from workers.extraction.adapters.offers import make_offer, overall_availability
from workers.extraction.adapters.payload import as_dicts, first_text, text
from workers.extraction.availability import from_flag
from workers.extraction.prices import parse_amount

__all__ = ["platform_product"]

_PRODUCT_JSON = ("//script[@type='application/json' and (@data-product-json or "
                 "starts-with(@id, 'ProductJson'))]")
_META = "var meta = {"
_SHOP_CURRENCY = re.compile(r"ShopifyAnalytics\.meta\.currency\s*=\s*'([A-Z]{3})'|"
                            r"Shopify\.currency\s*=\s*\{\s*\"active\"\s*:\s*\"([A-Z]{3})\"")
#: the largest script searched for Shopify's analytics meta, in characters
_MAX_SCRIPT = 200_000


def platform_product(tree: lxml.html.HtmlElement, page_url: str
                     ) -> tuple[Observation, str] | None:
    """The page's product from embedded platform JSON, and which JSON it was."""
    scripts = [s.text or "" for s in tree.iter("script") if len(s.text or "") < _MAX_SCRIPT]
    products = [(product, "Shopify product JSON") for product in (
        _json(script.text) for script in tree.xpath(_PRODUCT_JSON)) if isinstance(product, dict)]
    for script in scripts:
        start = script.find(_META)
        if start != -1:
            meta = _json_at(script, start + len(_META) - 1)
            product = meta.get("product") if isinstance(meta, dict) else None
            if isinstance(product, dict):
                products.append((product, "Shopify analytics meta"))
    if products:  # the shop's currency is searched for only on a Shopify page
        currency = next((a or b for s in scripts for a, b in _SHOP_CURRENCY.findall(s)), None)
        for product, where in products:
            if found := _shopify(product, page_url, currency):
                return found, where
    for form in tree.xpath("//form[@data-product_variations]")[:1]:
        found = _woo(_json(form.get("data-product_variations")), tree, page_url)
        if found is not None:
            return found, "WooCommerce variations"
    return None


def _json(raw: str | None) -> Any:
    try:
        return json.loads(raw or "", parse_float=Decimal)
    except (ValueError, RecursionError):
        return None


def _json_at(raw: str, start: int) -> Any:
    """The JSON value that begins at `raw[start]` (what follows it is not read)."""
    try:
        return json.JSONDecoder(parse_float=Decimal).raw_decode(raw, start)[0]
    except (ValueError, RecursionError):
        return None


def _cents(value: Any) -> Decimal | None:
    """Shopify's `product | json` writes prices in cents (an integer); a string with a
    decimal point is already in the currency's units."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int):
        return Decimal(value) / 100
    return parse_amount(value, structured=True)


def _shopify(product: dict[str, Any], page_url: str, currency: str | None
             ) -> Observation | None:
    offers: list[Offer] = []
    for variant in as_dicts(product.get("variants")):
        price = _cents(variant.get("price"))
        if price is None:
            continue
        compare = _cents(variant.get("compare_at_price"))
        available = variant.get("available")
        offers.append(make_offer(
            first_text(variant.get("public_title"), variant.get("title"),
                       variant.get("name")) or "default",
            compare if compare is not None and compare > price else None, price, currency,
            availability=from_flag(available) if isinstance(available, bool) else None))
    name = first_text(product.get("title"), product.get("name")) or (
        first_text(*(v.get("name") for v in as_dicts(product.get("variants")))))
    if not offers or not name:
        return None
    return Observation(
        provider_product_id=text(product.get("id")) or page_url, name=name,
        offers=tuple(offers), availability=overall_availability(tuple(offers)),
        brand=text(product.get("vendor")), category=text(product.get("type")), url=page_url)


def _woo(variations: Any, tree: lxml.html.HtmlElement, page_url: str) -> Observation | None:
    offers: list[Offer] = []
    for variation in as_dicts(variations):
        price = parse_amount(variation.get("display_price"), structured=True)
        if price is None:
            continue
        regular = parse_amount(variation.get("display_regular_price"), structured=True)
        options = variation.get("attributes")
        label = " / ".join(str(v) for v in options.values() if v) \
            if isinstance(options, dict) else ""
        stock = variation.get("is_in_stock")
        offers.append(make_offer(label or text(variation.get("variation_id")) or "default",
                                 regular if regular is not None and regular > price else None,
                                 price, None, availability=from_flag(stock)
                                 if isinstance(stock, bool) else None))
    headings = tree.xpath("//h1")
    name = " ".join(headings[0].text_content().split()) if headings else ""
    if not offers or not name:
        return None
    return Observation(provider_product_id=page_url, name=name[:300], offers=tuple(offers),
                       availability=overall_availability(tuple(offers)), url=page_url)
