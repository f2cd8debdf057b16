"""Realistic schema.org product pages for the crawl bench (~15-20 KB each).

A page looks like a shop's product page: a head with meta/OpenGraph tags and
stylesheets, navigation, breadcrumbs, a description, a specification table,
reviews, a "related products" block and a footer, with two JSON-LD blocks
(the Product with its offers, rating and reviews, and a BreadcrumbList).
Everything is derived from the product number, so runs are repeatable.
"""

from __future__ import annotations

import json
import random
from html import escape
from typing import Any

__all__ = ["ROBOTS_TXT", "product_page"]

#: Served on every host: `/private/` is disallowed, no Crawl-delay.
ROBOTS_TXT = "User-agent: *\nDisallow: /private/\nDisallow: /cart\n\nSitemap: /sitemap.xml\n"

_WORDS = (
    "organic hand-picked premium blend aroma smooth finish balanced roast citrus notes "
    "cocoa caramel vanilla ethically sourced small batch farm fresh limited edition "
    "recyclable packaging resealable pouch whole bean ground medium dark light"
).split()
_BRANDS = ("Acme Roasters", "Northwind", "Blue Ridge", "Copperleaf", "Hearth & Co")
_CATEGORIES = ("Coffee", "Tea", "Cocoa", "Snacks", "Accessories")


def _sentence(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(_WORDS) for _ in range(words)).capitalize() + "."


def _paragraphs(rng: random.Random, count: int) -> str:
    return "\n".join(
        f"<p>{escape(' '.join(_sentence(rng, rng.randint(8, 16)) for _ in range(5)))}</p>"
        for _ in range(count)
    )


def _jsonld(url: str, number: int, rng: random.Random, name: str, brand: str) -> dict[str, Any]:
    options = ("250g", "500g", "1kg")[: 1 + number % 3]
    offers = [
        {"@type": "Offer", "name": option, "sku": f"SKU-{number}-{option}", "url": url,
         "price": f"{9.5 + number % 40 + index * 7.25:.2f}", "priceCurrency": "USD",
         "availability": "https://schema.org/" + ("OutOfStock" if number % 17 == 0 and index
                                                  else "InStock"),
         "itemCondition": "https://schema.org/NewCondition",
         "seller": {"@type": "Organization", "name": brand}}
        for index, option in enumerate(options)
    ]
    reviews = [
        {"@type": "Review", "author": {"@type": "Person", "name": f"Customer {rng.randint(1, 999)}"},
         "datePublished": f"2025-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}",
         "reviewRating": {"@type": "Rating", "ratingValue": rng.randint(3, 5), "bestRating": 5},
         "reviewBody": " ".join(_sentence(rng, 12) for _ in range(2))}
        for _ in range(3)
    ]
    return {
        "@context": "https://schema.org", "@type": "Product", "@id": f"{url}#product",
        "name": name, "sku": f"P{number:06d}", "mpn": f"MPN{number * 7:08d}",
        "gtin13": f"{4006381333931 + number:013d}", "url": url,
        "image": [f"{url}/images/{i}.jpg" for i in range(4)],
        "description": _sentence(rng, 40),
        "brand": {"@type": "Brand", "name": brand},
        "category": _CATEGORIES[number % len(_CATEGORIES)],
        "aggregateRating": {"@type": "AggregateRating", "ratingValue": "4.6",
                            "reviewCount": 20 + number % 50},
        "review": reviews,
        "offers": offers if len(offers) > 1 else offers[0],
    }


def _breadcrumbs(base: str, category: str, name: str, url: str) -> dict[str, Any]:
    trail = [("Home", base + "/"), (category, f"{base}/c/{category.lower()}"), (name, url)]
    return {"@context": "https://schema.org", "@type": "BreadcrumbList",
            "itemListElement": [{"@type": "ListItem", "position": i + 1, "name": n, "item": u}
                                for i, (n, u) in enumerate(trail)]}


def _script(data: dict[str, Any]) -> str:
    return ('<script type="application/ld+json">'
            + json.dumps(data, indent=1).replace("</", "<\\/") + "</script>")


def _related(base: str, rng: random.Random) -> str:
    cards = "\n".join(
        f'<li class="card"><a href="{base}/p/{n}"><img src="{base}/p/{n}/images/0.jpg" alt="">'
        f"<span>Related product {n}</span></a><span class=\"price\">${rng.randint(5, 60)}.99</span></li>"
        for n in (rng.randint(0, 99999) for _ in range(8))
    )
    return f'<section class="related-products"><h2>You may also like</h2><ul>{cards}</ul></section>'


def _specs(rng: random.Random) -> str:
    rows = "\n".join(f"<tr><th>{escape(rng.choice(_WORDS).title())}</th>"
                     f"<td>{escape(_sentence(rng, 4))}</td></tr>" for _ in range(14))
    return f'<table class="specs">{rows}</table>'


def _nav(base: str) -> str:
    links = "".join(f'<li><a href="{base}/c/{c.lower()}">{c}</a></li>' for c in _CATEGORIES)
    more = "".join(f'<li><a href="{base}/info/{i}">Info page {i}</a></li>' for i in range(20))
    return f'<header><nav class="main-nav"><ul>{links}</ul><ul class="mega">{more}</ul></nav></header>'


def product_page(base: str, number: int) -> bytes:
    """The page of product `number` on the shop at `base` (`http://host:port`)."""
    rng = random.Random(number)
    url = f"{base}/p/{number}"
    brand = _BRANDS[number % len(_BRANDS)]
    name = f"{brand} {' '.join(rng.choice(_WORDS) for _ in range(3)).title()} #{number}"
    category = _CATEGORIES[number % len(_CATEGORIES)]
    head = (
        f'<meta charset="utf-8"><title>{escape(name)} | Shop</title>'
        f'<meta name="viewport" content="width=device-width, initial-scale=1">'
        f'<meta name="description" content="{escape(_sentence(rng, 20))}">'
        f'<link rel="canonical" href="{url}">'
        f'<meta property="og:type" content="product"><meta property="og:title" content="{escape(name)}">'
        f'<meta property="og:url" content="{url}"><meta property="og:image" content="{url}/images/0.jpg">'
        + "".join(f'<link rel="stylesheet" href="{base}/static/css/{i}.css">' for i in range(6))
        + "".join(f'<script src="{base}/static/js/{i}.js" defer></script>' for i in range(6))
        + _script(_jsonld(url, number, rng, name, brand))
        + _script(_breadcrumbs(base, category, name, url))
    )
    body = (
        _nav(base)
        + f'<main><div class="product"><h1>{escape(name)}</h1>'
        + '<div class="gallery">' + "".join(f'<img src="{url}/images/{i}.jpg" alt="">'
                                            for i in range(4)) + "</div>"
        + f'<div class="buy"><span class="price">${9.5 + number % 40:.2f}</span>'
        + '<button type="submit">Add to cart</button></div>'
        + f'<div class="description">{_paragraphs(rng, 6)}</div>{_specs(rng)}'
        + f'<div class="reviews">{_paragraphs(rng, 3)}</div></div>'
        + _related(base, rng)
        + "</main>"
        + f'<footer>{_paragraphs(rng, 2)}<ul>'
        + "".join(f'<li><a href="{base}/help/{i}">Help {i}</a></li>' for i in range(15))
        + "</ul></footer>"
    )
    return (f'<!DOCTYPE html>\n<html lang="en"><head>{head}</head>\n<body>{body}</body></html>\n'
            ).encode()
