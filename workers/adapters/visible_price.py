"""Last resort for pages without structured data: the price a visitor sees.

Looks at `itemprop=price`, `[data-price]` and `.price` elements (in that order
of trust) and takes the page heading as the name. Only used when nothing
better exists, since a page can show many prices.
"""

from __future__ import annotations

import lxml.html

from domain.values import Observation
from workers.adapters.offers import make_offer
from workers.prices import Money, parse_price
from workers.urls import normalize_url

__all__ = ["visible_price_observation"]

_PRICE_PATHS = (
    ("//*[@itemprop='price']", True),
    ("//*[@data-price]", True),
    ("//*[contains(concat(' ', normalize-space(@class), ' '), ' price ')]", False),
)


def visible_price_observation(
    tree: lxml.html.HtmlElement, page_url: str, hint: str | None
) -> Observation | None:
    money = _visible_price(tree, hint)
    name = _heading(tree)
    if money is None or not name:
        return None
    try:
        url = normalize_url(page_url)
    except ValueError:
        url = None
    return Observation(
        provider_product_id=url or page_url,
        name=name,
        offers=(make_offer("default", None, money.amount, money.currency),),
        url=url,
    )


def _visible_price(tree: lxml.html.HtmlElement, hint: str | None) -> Money | None:
    currency_nodes = tree.xpath("//*[@itemprop='priceCurrency']")
    declared = (
        (currency_nodes[0].get("content") or currency_nodes[0].text_content()).strip()
        if currency_nodes
        else None
    )
    for path, structured in _PRICE_PATHS:
        for element in tree.xpath(path)[:5]:
            raw = element.get("content") or element.get("data-price") or element.text_content()
            money = parse_price(raw, declared or hint, structured=structured)
            if money:
                return money
    return None


def _heading(tree: lxml.html.HtmlElement) -> str | None:
    for path in ("//h1", "//title"):
        for element in tree.xpath(path):
            title = " ".join(element.text_content().split())
            if title:
                return title[:300]
    return None
