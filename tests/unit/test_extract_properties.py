"""Whatever a server sends, extraction fails only with ExtractionError."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from domain.values import CrawlTask
from workers.extraction.adapters import ADAPTERS
from workers.extraction.adapters.base import ExtractionError, Page, Request
from workers.extraction.extract import extract_page
from workers.fetching.charset import decode

NAMES = [adapter.name for adapter in ADAPTERS]
URL = "http://store.example/graphql"

_scalars = (
    st.none() | st.booleans() | st.integers() | st.text(max_size=20) | st.floats(allow_nan=False)
)
_json = st.recursive(
    _scalars,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=12), children, max_size=5)
    ),
    max_leaves=25,
)
#: JSON shaped like the payloads adapters expect, with wrong types inside.
_keys = st.sampled_from(
    [
        "products",
        "variants",
        "prices",
        "data",
        "filteredProducts",
        "filteredDispensaries",
        "stores",
        "posts",
        "links",
        "offers",
        "Options",
        "Prices",
        "recSpecialPrices",
        "POSMetaData",
        "children",
        "queryInfo",
        "totalPages",
        "price",
        "id",
        "_id",
        "Name",
        "title",
        "name",
        # dispensary menu platforms (Dutchie Plus, Sweed, Dispense, Jane, Weedmaps)
        "option",
        "priceRec",
        "specialPriceRec",
        "specialPrice",
        "menuType",
        "quantity",
        "promoPrice",
        "availableQty",
        "unitSize",
        "list",
        "priceWithDiscounts",
        "venue",
        "productCategoryName",
        "count",
        "skip",
        "limit",
        "meta",
        "type",
        "attributes",
        "sale",
        "amount",
        "search_attributes",
        "available_weights",
        "product_id",
        "price_eighth_ounce",
        "discounted_price_eighth_ounce",
        "special_price_each",
        "price_each",
        "hits",
    ]
)
_shaped = st.recursive(
    _scalars,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(_keys, children, max_size=6),
    max_leaves=40,
)
_markup = st.lists(
    st.sampled_from(
        [
            "<html>",
            "<head>",
            "<body>",
            '<script type="application/ld+json">',
            "</script>",
            '{"@type": "Product", "name": "x", "offers": {"price": ',
            '"12,5"',
            "[",
            "{",
            "}",
            '<div itemscope itemtype="http://schema.org/Product">',
            '<span itemprop="price">',
            '<meta property="product:price:amount" content="',
            '"/>',
            "<rss><channel><item><link>",
            "<feed xmlns='http://www.w3.org/2005/Atom'><entry>",
            "</item>",
            "&amp;",
            "<!DOCTYPE x>",
            '<div vocab="https://schema.org/" typeof="Product">',
            '<span property="name">',
        ]
    )
    | st.text(max_size=15),
    max_size=30,
).map("".join)


def _check(text: str, name: str | None) -> None:
    task = CrawlTask(
        job_id="j", lease_id="l", attempt=1, kind="catalog", url=URL, platform_store_id="d1"
    )
    request = Request(URL, "POST", json={"variables": {"page": 0, "perPage": 1}})
    try:
        extract_page(Page(url=URL, text=text, request=request), task, adapter_name=name)
    except ExtractionError:
        pass


def _dumps(value: object) -> str:
    return json.dumps(value, default=str)


fast = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.mark.parametrize("name", [*NAMES, None])
@fast
@given(body=st.binary(max_size=400))
def test_random_bytes(name: str | None, body: bytes) -> None:
    _check(decode(body)[0], name)


@pytest.mark.parametrize("name", [*NAMES, None])
@fast
@given(text=_markup)
def test_random_markup(name: str | None, text: str) -> None:
    _check(text, name)


@pytest.mark.parametrize("name", [*NAMES, None])
@fast
@given(value=_json | _shaped)
def test_random_json(name: str | None, value: object) -> None:
    _check(_dumps(value), name)


@given(
    price=st.decimals(allow_nan=False, allow_infinity=False, places=2, min_value=0, max_value=10**6)
)
@settings(max_examples=50, deadline=None)
def test_shopify_prices_survive_exactly(price: Decimal) -> None:
    payload = {
        "products": [
            {
                "id": 1,
                "title": "t",
                "handle": "t",
                "variants": [{"title": "v", "price": str(price)}],
            }
        ]
    }
    _, found = extract_page(
        Page(url="https://s.example/products.json", text=_dumps(payload)), adapter_name="shopify"
    )
    assert found.observations[0].offers[0].price == price


MB = 1024 * 1024
HOSTILE = {
    "20 MB page": lambda: "<html><body><h1>Big</h1>" + (
        '<div class="price">€ 1,00</div><p>' + "x" * 1000 + "</p>") * (20 * MB // 1040),
    "100k nested elements": lambda: "<html><body>" + "<div>" * 100_000 + "<h1>Deep</h1>"
    '<span class="price">$5</span>' + "</div>" * 100_000,
    "5 MB attribute": lambda: '<html><body><h1 class="' + "a" * (5 * MB) + '">Wide</h1>'
    '<span class="price" data-x="' + "9" * MB + '">$5</span></body></html>',
    "2 MB broken JSON-LD": lambda: '<html><head><script type="application/ld+json">{"@type":'
    ' "Product", "name": "' + "n" * (2 * MB) + '", "offers": [</script></head></html>',
    "invalid encodings": lambda: decode(b"<html><meta charset='utf-8'><h1>Caf\xe9 \xff\xfe</h1>"
                                        b"<span class='price'>\x80\x81 12,00 \xe2\x82</span>"
                                        * 1000)[0],
}


@pytest.mark.timeout(120)
@pytest.mark.parametrize("case", list(HOSTILE))
def test_hostile_pages_end_with_products_or_a_clear_reason(case: str) -> None:
    text = HOSTILE[case]()
    try:
        _, extraction = extract_page(Page(url="https://shop.example/p", text=text,
                                          body=text.encode("utf-8", "replace")))
    except ExtractionError as error:
        assert str(error) and "\n" not in str(error)
        return
    for obs in extraction.observations:
        assert obs.name and len(obs.name) <= 300
        assert all(o.price is None or o.price > 0 for o in obs.offers)
