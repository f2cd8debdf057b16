"""HTML pages: product pages and the category listing, as JSON-LD or microdata.

Product pages carry the main Product first (its `url` is the page URL, also the
canonical link) and a "related products" section holding another Product that
must not be taken for the main one. Prices in markup use a dot (schema.org);
EUR stores show comma decimals in visible text only.
"""

from __future__ import annotations

import json
from decimal import Decimal
from html import escape
from typing import Any

from simulator.catalog import Catalog, Product, StoreSpec, Variant
from simulator.truth import product_url

SCHEMA = "https://schema.org/"


def visible_price(value: Decimal, currency: str) -> str:
    if currency == "EUR":
        return f"{value:.2f}".replace(".", ",") + " €"
    return f"${value:.2f}"


def _availability(variant: Variant) -> str:
    return SCHEMA + ("InStock" if variant.quantity > 0 else "OutOfStock")


def _page(title: str, canonical: str, body: str, head: str = "") -> str:
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        f"<title>{escape(title)}</title><link rel=\"canonical\" href=\"{escape(canonical)}\">"
        f"{head}</head>\n<body>\n{body}\n</body></html>\n"
    )


def _jsonld_offer(variant: Variant, currency: str, url: str) -> dict[str, Any]:
    current = variant.special_price if variant.on_sale and variant.special_price else variant.price
    offer: dict[str, Any] = {
        "@type": "Offer", "name": variant.option, "sku": variant.sku, "url": url,
        "price": f"{current:.2f}", "priceCurrency": currency,
        "availability": _availability(variant),
    }
    if variant.on_sale:
        offer["priceSpecification"] = {
            "@type": "UnitPriceSpecification", "priceType": SCHEMA + "StrikethroughPrice",
            "price": f"{variant.price:.2f}", "priceCurrency": currency,
        }
    return offer


def jsonld_product(store: StoreSpec, base_url: str, product: Product) -> dict[str, Any]:
    url = product_url(store, base_url, product)
    offers = [_jsonld_offer(v, store.currency, url) for v in product.variants]
    data: dict[str, Any] = {
        "@context": "https://schema.org", "@type": "Product", "name": product.name,
        "sku": product.provider_id, "productID": product.provider_id,
        "brand": {"@type": "Brand", "name": product.brand}, "category": product.category,
        "image": f"{base_url}/images/{product.handle}.jpg", "url": url,
    }
    if len(offers) == 1:
        data["offers"] = offers[0]
    elif sum(map(ord, product.provider_id)) % 2:  # both shapes occur
        data["offers"] = offers
    else:
        prices = [Decimal(o["price"]) for o in offers]
        data["offers"] = {"@type": "AggregateOffer", "lowPrice": f"{min(prices):.2f}",
                          "highPrice": f"{max(prices):.2f}", "offerCount": len(offers),
                          "priceCurrency": store.currency, "offers": offers}
    return data


def _ld_script(data: Any) -> str:
    text = json.dumps(data, indent=1).replace("</", "<\\/")
    return f'<script type="application/ld+json">\n{text}\n</script>'


def _visible(product: Product, currency: str) -> str:
    rows = "".join(
        f"<li class=\"option\">{escape(v.option)}: <span class=\"price\">"
        f"{visible_price(v.special_price if v.on_sale and v.special_price else v.price, currency)}"
        f"</span>{_strike(v, currency)}</li>"
        for v in product.variants
    )
    return f"<h1>{escape(product.name)}</h1><p class=\"brand\">{escape(product.brand)}</p><ul>{rows}</ul>"


def _strike(variant: Variant, currency: str) -> str:
    if not variant.on_sale:
        return ""
    return f" <s class=\"was\">{visible_price(variant.price, currency)}</s>"


def product_page(catalog: Catalog, base_url: str, product: Product,
                 related: Product | None) -> str:
    """A product page (JSON-LD or microdata by the store's platform)."""
    store = catalog.store
    url = product_url(store, base_url, product)
    if store.platform == "microdata":
        main = microdata_product(store, base_url, product, tag="main")
        extra = microdata_product(store, base_url, related, tag="div") if related else ""
    else:
        main = f"<main>{_visible(product, store.currency)}{_ld_script(jsonld_product(store, base_url, product))}</main>"
        extra = (_visible(related, store.currency) + _ld_script(jsonld_product(store, base_url, related))
                 if related else "")
    section = (f'<section class="related-products" id="related"><h2>Related products</h2>{extra}</section>'
               if extra else "")
    return _page(product.name, url, main + "\n" + section)


def listing_page(catalog: Catalog, base_url: str) -> str:
    """`/collections/all`: every listed product, as a schema.org ItemList."""
    store = catalog.store
    url = f"{base_url}/collections/all"
    links = "".join(
        f'<li><a href="{escape(product_url(store, base_url, p))}">{escape(p.name)}</a></li>'
        for p in catalog.listed
    )
    if store.platform == "microdata":
        items = "".join(
            f'<div itemprop="itemListElement" itemscope itemtype="{SCHEMA}ListItem">'
            f'<meta itemprop="position" content="{n}">'
            f'{microdata_product(store, base_url, p, tag="div", prop="item")}</div>'
            for n, p in enumerate(catalog.listed, start=1)
        )
        body = f'<div itemscope itemtype="{SCHEMA}ItemList"><h1>All products</h1>{items}</div>'
        return _page("All products", url, body + f"<ul class=\"nav\">{links}</ul>")
    elements = [{"@type": "ListItem", "position": n, "item": jsonld_product(store, base_url, p)}
                for n, p in enumerate(catalog.listed, start=1)]
    data = {"@context": "https://schema.org", "@type": "ItemList", "url": url,
            "numberOfItems": len(elements), "itemListElement": elements}
    return _page("All products", url, f"<h1>All products</h1><ul>{links}</ul>{_ld_script(data)}")


def _md_offer(variant: Variant, currency: str) -> str:
    current = variant.special_price if variant.on_sale and variant.special_price else variant.price
    strike = ""
    if variant.on_sale:
        strike = (
            f'<span itemprop="priceSpecification" itemscope itemtype="{SCHEMA}UnitPriceSpecification">'
            f'<link itemprop="priceType" href="{SCHEMA}StrikethroughPrice">'
            f'<meta itemprop="price" content="{variant.price:.2f}">'
            f'<meta itemprop="priceCurrency" content="{currency}">'
            f'<s>{visible_price(variant.price, currency)}</s></span>'
        )
    return (
        f'<li itemprop="offers" itemscope itemtype="{SCHEMA}Offer">'
        f'<span itemprop="name">{escape(variant.option)}</span> '
        f'<meta itemprop="sku" content="{escape(variant.sku)}">'
        f'<span itemprop="price" content="{current:.2f}">{visible_price(current, currency)}</span>'
        f'<meta itemprop="priceCurrency" content="{currency}">'
        f'<link itemprop="availability" href="{_availability(variant)}">{strike}</li>'
    )


def microdata_product(store: StoreSpec, base_url: str, product: Product, *, tag: str,
                      prop: str | None = None) -> str:
    url = product_url(store, base_url, product)
    itemprop = f' itemprop="{prop}"' if prop else ""
    offers = "".join(_md_offer(v, store.currency) for v in product.variants)
    return (
        f'<{tag}{itemprop} itemscope itemtype="{SCHEMA}Product">'
        f'<h1 itemprop="name">{escape(product.name)}</h1>'
        f'<meta itemprop="sku" content="{escape(product.provider_id)}">'
        f'<meta itemprop="productID" content="{escape(product.provider_id)}">'
        f'<link itemprop="url" href="{escape(url)}">'
        f'<img itemprop="image" src="{base_url}/images/{escape(product.handle)}.jpg" alt="">'
        f'<div itemprop="brand" itemscope itemtype="{SCHEMA}Brand">'
        f'<span itemprop="name">{escape(product.brand)}</span></div>'
        f'<meta itemprop="category" content="{escape(product.category)}">'
        f"<ul>{offers}</ul></{tag}>"
    )


def embedded_menu_page(store: StoreSpec, base_url: str) -> str:
    """The dispensary's menu page: an app shell naming the GraphQL endpoint."""
    config = {"dispensaryId": store.platform_id, "cName": store.slug,
              "graphqlUrl": f"{base_url}/graphql"}
    body = (f"<h1>{escape(store.name)} menu</h1><div id=\"menu-root\"></div>"
            f"<script>window.__MENU_CONFIG__ = {json.dumps(config)};</script>")
    return _page(f"{store.name} menu", f"{base_url}/embedded-menu/{store.slug}", body)


def private_page() -> str:
    return _page("Private", "/private/", "<p>Staff only. robots.txt forbids this path.</p>")
