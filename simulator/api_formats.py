"""JSON bodies of the API platforms: dispensary GraphQL menu, Shopify, WooCommerce.

Pure functions of a `Catalog` (plus the store's base URL); the server only
routes and serialises. Formats follow the shapes the extractors parse.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from simulator.catalog import Catalog, Product, StoreSpec
from simulator.truth import product_url

DISPENSARY_PER_PAGE = 50


def _num(value: Decimal) -> float:
    return float(value)


def _image(base_url: str, product: Product) -> str:
    return f"{base_url}/images/{product.handle}.jpg"


def graphql_error(message: str) -> dict[str, Any]:
    return {"errors": [{"message": message, "extensions": {"code": "BAD_USER_INPUT"}}],
            "data": None}


def consumer_dispensaries(store: StoreSpec, variables: Mapping[str, Any]) -> dict[str, Any]:
    """`ConsumerDispensaries`: look a dispensary up by slug (cName) or id."""
    wanted = (variables.get("dispensaryFilter") or {}).get("cNameOrID")
    found = wanted in (store.slug, store.platform_id)
    entry = {"id": store.platform_id, "name": store.name, "cName": store.slug,
             "timezone": store.timezone}
    return {"data": {"filteredDispensaries": [entry] if found else []}}


def _dispensary_product(catalog: Catalog, base_url: str, product: Product) -> dict[str, Any]:
    regular = [_num(v.price) for v in product.variants]
    specials = [_num(v.special_price) if v.on_sale and v.special_price else None
                for v in product.variants]
    thc, cbd = product.thc or (0.0, 0.0), product.cbd or (0.0, 0.0)
    return {
        "_id": product.provider_id, "id": product.provider_id, "Name": product.name,
        "cName": product.handle, "brandName": product.brand, "brand": {"name": product.brand},
        "type": product.category, "subcategory": product.subcategory,
        "strainType": product.strain_type,
        "Options": [v.option for v in product.variants],
        "rawOptions": [v.option for v in product.variants],
        "Prices": regular, "recPrices": regular, "medicalPrices": regular,
        "recSpecialPrices": specials, "special": any(s is not None for s in specials),
        "POSMetaData": {"children": [
            {"option": v.option, "quantity": v.quantity, "quantityAvailable": v.quantity}
            for v in product.variants]},
        "THCContent": {"range": list(thc), "unit": "PERCENTAGE"},
        "CBDContent": {"range": list(cbd), "unit": "PERCENTAGE"},
        "Image": _image(base_url, product), "Status": "Active",
        "DispensaryID": catalog.store.platform_id,
    }


def filtered_products(catalog: Catalog, base_url: str,
                      variables: Mapping[str, Any]) -> dict[str, Any]:
    """`FilteredProducts`: one 0-based page of the menu (`page`, `perPage`)."""
    wanted = (variables.get("productsFilter") or {}).get("dispensaryId")
    if wanted not in (catalog.store.platform_id, catalog.store.slug):
        return graphql_error(f"unknown dispensaryId {wanted!r}")
    page = max(int(variables.get("page") or 0), 0)
    per_page = max(int(variables.get("perPage") or DISPENSARY_PER_PAGE), 1)
    listed = catalog.listed
    chunk = listed[page * per_page:(page + 1) * per_page]
    return {"data": {"filteredProducts": {
        "products": [_dispensary_product(catalog, base_url, p) for p in chunk],
        "queryInfo": {"totalCount": len(listed),
                      "totalPages": math.ceil(len(listed) / per_page)},
    }}}


def shopify_products(catalog: Catalog, base_url: str, page: int, limit: int) -> dict[str, Any]:
    """`/products.json?limit=L&page=P` (1-based); past the end -> no products."""
    start = (max(page, 1) - 1) * limit
    chunk = catalog.listed[start:start + limit]
    return {"products": [_shopify_product(base_url, p) for p in chunk]}


def _shopify_product(base_url: str, product: Product) -> dict[str, Any]:
    variants = [
        {"id": int(v.variant_id), "product_id": int(product.provider_id), "title": v.option,
         "price": f"{v.special_price if v.on_sale else v.price:.2f}",
         "compare_at_price": f"{v.price:.2f}" if v.on_sale else None,
         "available": v.quantity > 0, "sku": v.sku, "option1": v.option}
        for v in product.variants
    ]
    return {"id": int(product.provider_id), "title": product.name, "handle": product.handle,
            "vendor": product.brand, "product_type": product.subcategory,
            "variants": variants, "images": [{"src": _image(base_url, product)}]}


def woocommerce_products(catalog: Catalog, base_url: str, page: int,
                         per_page: int) -> tuple[list[dict[str, Any]], int]:
    """Store API page (1-based) and the total page count (`X-WP-TotalPages`)."""
    listed = catalog.listed
    start = (max(page, 1) - 1) * per_page
    chunk = listed[start:start + per_page]
    body = [_woo_product(catalog, base_url, p) for p in chunk]
    return body, max(math.ceil(len(listed) / per_page), 1)


def _minor(value: Decimal) -> str:
    return str(int((value * 100).to_integral_value()))


def _woo_product(catalog: Catalog, base_url: str, product: Product) -> dict[str, Any]:
    v = product.variants[0]  # WooCommerce simple products: one option
    current = v.special_price if v.on_sale and v.special_price else v.price
    return {
        "id": int(product.provider_id), "name": product.name, "slug": product.handle,
        "permalink": product_url(catalog.store, base_url, product), "sku": v.sku,
        "prices": {"price": _minor(current), "regular_price": _minor(v.price),
                   "sale_price": _minor(current), "currency_code": catalog.store.currency,
                   "currency_minor_unit": 2},
        "is_in_stock": v.quantity > 0, "is_purchasable": True, "on_sale": v.on_sale,
        "categories": [{"name": product.category}, {"name": product.subcategory}],
        "images": [{"src": _image(base_url, product)}],
    }
