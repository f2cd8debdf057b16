"""Generic product pages: schema.org (JSON-LD, microdata, RDFa), then
OpenGraph product tags, then what the page visibly shows, field by field in that
order of trust (`workers.extraction.adapters.merge`)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import replace
from functools import cache, partial
from typing import Any

from domain.urls import join_url
from domain.values import CrawlTask, Observation
from workers.extraction.adapters.base import Extraction, Page, Request
from workers.extraction.adapters.main_product import PRODUCT_TYPES, page_products
from workers.extraction.adapters.merge import Choice, complete, merge
from workers.extraction.adapters.opengraph import opengraph_observation
from workers.extraction.adapters.platform_json import platform_product
from workers.extraction.adapters.schema_product import PRICE_HIGH, product_observation
from workers.extraction.adapters.structured_data import (
    PageData,
    parse_html,
    read_head_data,
    with_embedded_markup,
)
from workers.extraction.adapters.visible import read_visible
from workers.extraction.adapters.visible_marks import OLD_LABELS
from workers.extraction.currency import where_from
from workers.extraction.page_language import declared_language, words_language
from workers.extraction.prices import written_forms

__all__ = ["SchemaOrgAdapter"]

_PLACEHOLDER: dict[str, Any] = {"@type": "Product"}

_HTML_MARK = re.compile(r"<(!doctype\s+html|html|head|body|meta|script|div|main)\b", re.IGNORECASE)


class SchemaOrgAdapter:
    name = "schema_org"
    version = "schema_org/3"

    def detects(self, page: Page) -> bool:
        return bool(_HTML_MARK.search(page.text[:8192]))

    def start(self, task: CrawlTask) -> Request:
        return Request(task.url)

    def extract(self, page: Page, task: CrawlTask) -> Extraction:
        observations, _ = self._read(page, task, explain=False)
        return Extraction(observations=observations)

    def explain(self, page: Page, task: CrawlTask) -> tuple[Choice, ...]:
        """Per field of the main product: the value chosen, its source, what lost."""
        return self._read(page, task, explain=True)[1]

    def _read(self, page: Page, task: CrawlTask, explain: bool
              ) -> tuple[tuple[Observation, ...], tuple[Choice, ...]]:
        tree = parse_html(page.text)
        if tree is None:
            return (), ()
        data = read_head_data(tree)
        page_urls = [page.url] + ([join_url(page.url, data.canonical)] if data.canonical else [])
        products = _own_jsonld_product(data.jsonld, page_urls)
        if products is None:
            data = with_embedded_markup(data, tree, page.url, PRODUCT_TYPES)
            products = page_products([*data.jsonld, *data.microdata, *data.rdfa], page_urls)
        origins = {id(node): syntax for syntax, nodes in (
            ("json-ld", data.jsonld), ("microdata", data.microdata), ("rdfa", data.rdfa))
            for node in nodes}
        where = where_from(page.url, declared_language(tree.get("lang"), data.content_language),
                           data.opengraph.get("og:locale"),
                           task.currency or _declared_currency(data))
        if where.territory is None:  # no country said: the page's words may say it
            where = replace(where, words=cache(partial(words_language, tree)))
        # A lone product is the page's own product, so the page is its URL.
        own_url = page_urls[-1] if len(products) == 1 else None
        found = [product_observation(p, page.url, where.hint, own_url) for p in products]
        observations = _unique(obs for obs in found if obs)
        origin = origins.get(id(products[0]), "json-ld") if products else None
        if not observations or (len(observations) == 1
                                and observations[0].availability == "unknown"):
            # the platform's own JSON, next in precedence after schema.org
            embedded = platform_product(tree, page.url)
            if embedded is not None and not observations:
                observations, origin = (embedded[0],), embedded[1]
            elif embedded is not None and embedded[0].availability != "unknown":
                first = observations[0]
                observations = (replace(first, availability=embedded[0].availability,
                                        attributes={**first.attributes,
                                                    "source.availability": embedded[1]}),)
        if not observations:
            fallback = opengraph_observation(data.opengraph, page.url, where.hint)
            observations, origin = ((fallback,), "opengraph") if fallback else ((), None)
        if len(observations) > 1:
            return observations, ()  # a category page: every product as listed
        main = observations[0] if observations else None
        seen = read_visible(tree, where) if explain or main is None or not complete(main) \
            or PRICE_HIGH in main.attributes or _may_show_a_sale(main, page) \
            or _may_be_unbuyable(main, page) else None
        main, choices = merge(main, origin, seen, where, page.url, data.opengraph)
        return ((main,) if main else ()), choices

def _own_jsonld_product(
    jsonld: tuple[dict[str, Any], ...], page_urls: list[str]
) -> list[dict[str, Any]] | None:
    """The page's product when JSON-LD names it (its url/@id is the page), else None.

    Then microdata and RDFa (extruct, ~90 % of the extraction time) cannot change
    the choice: `page_products` takes the first top-level product matching the
    page, and JSON-LD items come first. A leading placeholder Product that matches
    no URL tells "a JSON-LD product matched" from "fell back to the first one".
    """
    chosen = page_products([_PLACEHOLDER, *jsonld], page_urls)
    return None if chosen[0] is _PLACEHOLDER else chosen


#: what marks a struck-through (regular) price in a page's source (lower-cased)
_STRUCK_MARKUP = re.compile(
    rb"<(?:del|s|strike)[\s>]|line-through|(?:old|was|original|compare|regular|strike|"
    rb"crossed|before)[-_]?price|price[-_]{0,2}(?:old|was|original|compare|regular|before)")
#: the labels of a list, recommended or former price ("UVP", "MRP", "was") in a page's
#: source (lower-cased; "before" is left out: CSS writes "::before")
_OLD_LABEL_MARKUP = re.compile(OLD_LABELS.replace("before|", "").lower().encode())
#: what marks an auction's bid button in a page's source
_BID_MARKUP = re.compile(rb"place[-_ ]?bid|bid[-_ ]?now|current[-_ ]?bid", re.IGNORECASE)
#: how far before a price its struck-through markup may open, in bytes
_STRUCK_REACH = 300


def _may_show_a_sale(main: Observation, page: Page) -> bool:
    """Whether complete structured data with one price and no sale price may be the
    regular price the page shows struck through beside a lower one, or an auction's
    starting bid below the current one: then the visible page is read too (`merge`
    decides). Only the page's source is searched (its bytes): struck-price markup
    shortly before the structured price written out, or, for an offer that ends at a
    time (`availabilityEnds`), a bid button anywhere."""
    if len(main.offers) != 1 or main.offers[0].special_price is not None \
            or main.offers[0].price is None:
        return False
    source = page.body or page.text.encode("utf-8", "replace")
    for form in written_forms(main.offers[0].price):
        written = form.encode()
        start = source.find(written)
        while start != -1:
            before = source[max(0, start - _STRUCK_REACH):start].lower()
            if _STRUCK_MARKUP.search(before) or _OLD_LABEL_MARKUP.search(before):
                return True
            start = source.find(written, start + len(written))
    return bool(main.attributes.get("availability_ends")) \
        and _BID_MARKUP.search(source) is not None


#: what a buy control's markup says (lower-cased), in the languages of `visible._BUY`
_CART_MARKUP = re.compile(rb"cart|basket|bag|trolley|korb|panier|carrito|carrello|koszyk|"
                          rb"winkelwagen|kurv|varukorg|sepet|\xd0\xba\xd0\xbe\xd1\x80\xd0\xb7|buy|kaufen|"
                          rb"comprar|acheter|purchase")
#: how far around the word "disabled" a buy control's tag and label may reach, in bytes
_CONTROL_REACH = 300


def _may_be_unbuyable(main: Observation, page: Page) -> bool:
    """Whether a product structured data says is in stock may have a disabled buy
    control: the word "disabled" inside a `<button>`/`<input>` tag with a cart word
    around it, searched in the page's bytes. Then the visible page is read too
    (`merge` lets a disabled control with the page's out-of-stock words win)."""
    if main.availability != "in_stock":
        return False
    source = page.body or page.text.encode("utf-8", "replace")
    start = source.find(b"disabled")
    while start != -1:
        tag = source.rfind(b"<", max(0, start - _CONTROL_REACH), start)
        name = source[tag + 1:tag + 7].lower() if tag != -1 else b""
        if (name == b"button" or name.startswith(b"input")) and b">" not in source[tag:start]:
            around = source[tag:start + _CONTROL_REACH].lower()
            if _CART_MARKUP.search(around):
                return True
        start = source.find(b"disabled", start + 8)
    return False


def _declared_currency(data: PageData) -> str | None:
    """The one `priceCurrency` the page's JSON-LD declares anywhere (an Event's or an
    Offer's outside any product too), as the page's currency; None when it names none
    or several."""
    found = data.declared_currencies
    return next(iter(found)) if len(found) == 1 else None


def _unique(observations: Iterable[Observation]) -> tuple[Observation, ...]:
    # The same product is often marked up twice (JSON-LD and microdata).
    seen: dict[str, Observation] = {}
    for obs in observations:
        seen.setdefault(obs.provider_product_id, obs)
    return tuple(seen.values())
