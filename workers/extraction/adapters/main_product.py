"""Which schema.org Products a page is about.

A product page is about one product: the one whose url/@id is the page (or
its canonical URL), else the first top-level one. Products reachable only
through `isRelatedTo`/`isSimilarTo`, or listed in a "related" ItemList, are
other products and never chosen. A category page (an ItemList and no
top-level Product) is about every product it lists.
"""

from __future__ import annotations

import re
from typing import Any

from workers.extraction.adapters.payload import as_dicts, text
from workers.extraction.adapters.schema_product import is_type
from workers.extraction.urls import normalize_url

__all__ = ["PRODUCT_TYPES", "page_products"]

#: the types of a product itself: schema.org's Product and its subtypes (a used-car
#: listing is a `Car`, a configured item an `IndividualProduct`)
_PRODUCT = ("Product", "ProductGroup", "ProductModel", "IndividualProduct", "SomeProducts",
            "Vehicle", "Car", "Motorcycle", "BusOrCoach", "MotorizedBicycle")
#: the schema.org types `page_products` reads products from (a product itself, or the
#: products an ItemList lists)
PRODUCT_TYPES = (*_PRODUCT, "ItemList")

_RELATED_LIST = re.compile(r"related|similar|also|recommend|recently", re.IGNORECASE)
_CONTAINER_KEYS = ("@graph", "mainEntity", "mainEntityOfPage", "about")


def page_products(items: list[dict[str, Any]], page_urls: list[str]) -> list[dict[str, Any]]:
    """The main product alone, or every listed product of a category page."""
    tops: list[dict[str, Any]] = []
    listed: list[dict[str, Any]] = []
    for item in items:
        _collect(item, tops, listed, depth=0)
    if tops:
        return [_main(tops, page_urls)]
    return listed


def _collect(
    node: dict[str, Any], tops: list[dict[str, Any]], listed: list[dict[str, Any]], depth: int
) -> None:
    if depth > 4:
        return
    if any(is_type(node, name) for name in _PRODUCT):
        tops.append(node)  # its isRelatedTo/isSimilarTo are deliberately not walked
        return
    if is_type(node, "ItemList"):
        if not _RELATED_LIST.search(text(node.get("name")) or ""):
            listed.extend(_list_products(node))
        return
    for key in _CONTAINER_KEYS:
        for child in as_dicts(node.get(key)):
            _collect(child, tops, listed, depth + 1)


def _list_products(node: dict[str, Any]) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    for element in as_dicts(node.get("itemListElement")):
        item = element.get("item") if is_type(element, "ListItem") else element
        if isinstance(item, dict) and any(is_type(item, name) for name in _PRODUCT):
            found.append(item)
    return found


def _main(tops: list[dict[str, Any]], page_urls: list[str]) -> dict[str, Any]:
    wanted = {_norm(url) for url in page_urls} - {None}
    base = page_urls[0] if page_urls else None
    chosen = next((product for product in tops
                   if any(_norm(value, base) in wanted for value in _ids(product) if value)),
                  tops[0])
    return _with_variants(chosen, tops, base)


def _ids(product: dict[str, Any]) -> tuple[str | None, str | None]:
    return text(product.get("url")), text(product.get("@id"))


def _with_variants(product: dict[str, Any], tops: list[dict[str, Any]], base: str | None
                   ) -> dict[str, Any]:
    """A shop that marks up one Product per variant (a size each: the same name and page,
    its own sku and offer) shows one product: its offers are all of theirs, each named
    by its variant's sku, so the product is in stock when any size is."""
    name = text(product.get("name"))
    if not name:
        return product
    page = {_norm(value, base) for value in _ids(product)}
    variants = [p for p in tops if text(p.get("name")) == name
                and {_norm(value, base) for value in _ids(p)} == page]
    skus = [text(p.get("sku")) for p in variants]
    if len(variants) < 2 or None in skus or len(set(skus)) < len(skus):
        return product
    offers = [{**offer, "name": text(offer.get("name")) or sku}
              for variant, sku in zip(variants, skus)
              for offer in as_dicts(variant.get("offers"))
              if not is_type(offer, "AggregateOffer")]
    return {**product, "offers": offers} if offers else product


def _norm(url: str | None, base: str | None = None) -> str | None:
    # normalize_url drops fragments, so "…/p#product" matches "…/p".
    try:
        return normalize_url(url, base) if url else None
    except ValueError:
        return None
