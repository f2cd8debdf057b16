"""Platform API adapters on fixture payloads: Shopify, WooCommerce, dispensary GraphQL."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest

from domain.values import CrawlTask
from workers.extraction.adapters import by_name, detect, for_task
from workers.extraction.adapters.base import ExtractionError, Page, Request
from workers.extraction.adapters.dispensary_query import products_body
from workers.extraction.extract import extract_page

PAGES = Path(__file__).parent.parent / "fixtures" / "pages"


def page(name: str, url: str, request: Request | None = None) -> Page:
    return Page(url=url, text=(PAGES / name).read_text("utf-8"), request=request)


def task(url: str, kind: str = "catalog", **extra: str) -> CrawlTask:
    return CrawlTask(job_id="j", lease_id="l", attempt=1, kind=kind, url=url, **extra)


# -- Shopify ---------------------------------------------------------------------------

SHOP = "https://northpeak.example"


def test_shopify_start_requests_the_first_page_of_products_json() -> None:
    for url in (SHOP, f"{SHOP}/", f"{SHOP}/products.json"):
        assert by_name("shopify").start(task(url)) == Request(
            f"{SHOP}/products.json?limit=250&page=1"
        )


def test_shopify_variants_become_offers_and_compare_at_price_is_the_regular_price() -> None:
    payload = page("shopify_products.json", f"{SHOP}/products.json?limit=250&page=1")
    adapter, found = extract_page(payload, task(SHOP, currency="cad"))
    assert adapter.name == "shopify" and found.next_request is None
    runner, socks = found.observations
    assert (runner.provider_product_id, runner.brand, runner.category) == (
        "7001",
        "Northpeak",
        "Shoes",
    )
    assert runner.url == f"{SHOP}/products/trail-runner-2"
    assert runner.image_url == "https://cdn.example.com/tr2.jpg"
    sale, full = runner.offers
    assert (sale.option, sale.price, sale.special_price, sale.currency) == (
        "US 9 / Blue",
        Decimal("119.99"),
        Decimal("89.99"),
        "CAD",
    )
    assert (full.price, full.special_price, full.availability) == (
        Decimal("119.99"),
        None,
        "out_of_stock",
    )
    assert runner.availability == "in_stock"
    # compare_at_price equal to the price is not a sale
    assert socks.offers[0].option == "default" and socks.offers[0].special_price is None
    assert socks.availability == "out_of_stock" and socks.sku == "WS-1"


def test_shopify_full_page_asks_for_the_next_one() -> None:
    products = ",".join(
        f'{{"id": {i}, "title": "P{i}", "handle": "p{i}", "variants": []}}' for i in range(2)
    )
    full = Page(url=f"{SHOP}/products.json?limit=2&page=3", text=f'{{"products": [{products}]}}')
    found = by_name("shopify").extract(full, task(SHOP))
    assert found.next_request == Request(f"{SHOP}/products.json?limit=2&page=4")


# -- WooCommerce -----------------------------------------------------------------------

CAFE = "https://cafe.example"


def test_woocommerce_prices_are_minor_units_and_sale_is_special_price() -> None:
    payload = page(
        "woocommerce_products.json", f"{CAFE}/wp-json/wc/store/v1/products?page=1&per_page=100"
    )
    adapter, found = extract_page(payload, task(CAFE))
    assert adapter.name == "woocommerce" and found.next_request is None
    pour, matcha = found.observations
    assert pour.offers[0].price == Decimal("24.99")
    assert pour.offers[0].special_price == Decimal("19.99")
    assert pour.offers[0].currency == "EUR"
    assert (pour.brand, pour.category, pour.sku) == ("Kiln & Co", "Brewing", "CPO-1")
    assert matcha.offers[0].price == Decimal(1500) and matcha.offers[0].currency == "JPY"
    assert matcha.availability == "out_of_stock" and matcha.sku is None


def test_woocommerce_start_and_pagination() -> None:
    adapter = by_name("woocommerce")
    assert adapter.start(task(f"{CAFE}/shop/wp-json/wc/store/v1/products")).url == (
        f"{CAFE}/shop/wp-json/wc/store/v1/products?page=1&per_page=100"
    )
    one = '[{"id": 1, "name": "A", "prices": {"price": "100", "currency_minor_unit": 2}}]'
    found = adapter.extract(
        Page(url=f"{CAFE}/wp-json/wc/store/v1/products?page=2&per_page=1", text=one), task(CAFE)
    )
    assert found.next_request == Request(f"{CAFE}/wp-json/wc/store/v1/products?page=3&per_page=1")


# -- dispensary GraphQL ----------------------------------------------------------------

MENU = "http://menus.example"


def test_dispensary_start_posts_the_filtered_products_query() -> None:
    request = by_name("dispensary").start(task(f"{MENU}/graphql", platform_store_id="disp-0042"))
    assert (request.url, request.method) == (f"{MENU}/graphql", "POST")
    assert request.json is not None
    assert request.json["operationName"] == "FilteredProducts"
    assert request.json["variables"]["productsFilter"] == {
        "dispensaryId": "disp-0042",
        "pricingType": "rec",
        "Status": "All",
        "types": [],
    }
    assert (request.json["variables"]["page"], request.json["variables"]["perPage"]) == (0, 50)
    assert "filteredProducts" in request.json["query"]


def test_dispensary_full_page_builds_the_next_page_request() -> None:
    sent = Request(f"{MENU}/graphql", "POST", json=products_body("disp-0042", 0, per_page=2))
    _, found = extract_page(
        page("dispensary_products_page.json", f"{MENU}/graphql", sent),
        task(f"{MENU}/graphql", platform_store_id="disp-0042"),
    )
    assert found.next_request == Request(
        f"{MENU}/graphql", "POST", json=products_body("disp-0042", 1, per_page=2)
    )


def test_dispensary_stops_on_a_short_page_and_on_the_last_page() -> None:
    short = Request(f"{MENU}/graphql", "POST", json=products_body("d", 2, per_page=2))
    _, found = extract_page(page("dispensary_products_last.json", f"{MENU}/graphql", short))
    assert found.next_request is None and len(found.observations) == 1
    last = Request(f"{MENU}/graphql", "POST", json=products_body("d", 2, per_page=2))
    _, found = extract_page(page("dispensary_products_page.json", f"{MENU}/graphql", last))
    assert found.next_request is None  # page 2 of totalPages 3 is the last one


def test_dispensary_products_options_specials_stock_and_potency() -> None:
    _, found = extract_page(page("dispensary_products_page.json", f"{MENU}/graphql"))
    dream, gummies = found.observations
    assert (dream.provider_product_id, dream.brand, dream.category) == (
        "5f1a2b3c",
        "Green Valley",
        "Flower",
    )
    eighth, quarter, medical_eighth, medical_quarter = dream.offers
    # the medical menu's prices are offers of their own, not dropped
    assert [(o.option, o.price, o.special_price, o.pricing_type) for o in (
        medical_eighth, medical_quarter)] == [("1/8oz", Decimal(40), None, "medical"),
                                              ("1/4oz", Decimal(72), None, "medical")]
    assert (medical_eighth.quantity, medical_quarter.availability) == (10, "out_of_stock")
    assert (eighth.option, eighth.price, eighth.special_price, eighth.pricing_type) == (
        "1/8oz",
        Decimal(45),
        Decimal("39.5"),
        "rec",
    )
    assert (eighth.quantity, eighth.availability) == (10, "in_stock")
    assert (quarter.special_price, quarter.availability) == (None, "out_of_stock")
    assert dream.availability == "in_stock" and dream.quantity == 10
    assert dict(dream.attributes) == {
        "strain_type": "Hybrid",
        "subcategory": "premium",
        "thc": "18.5-21%",
        "cbd": "0.1%",
    }
    assert dream.image_url == "https://images.example/blue-dream.png"
    # a 0 special is no special; no stock anywhere is out of stock
    assert gummies.provider_product_id == "6a7b8c9d" and gummies.brand == "Chewz"
    assert gummies.offers[0].special_price is None
    assert gummies.availability == "out_of_stock"


def test_dispensary_entry_point_resolver() -> None:
    entry = task(
        f"{MENU}/embedded-menu/green-leaf-denver", kind="entry_point", platform="dispensary"
    )
    adapter = for_task(entry)
    assert adapter.name == "dispensary-resolver"
    request = adapter.start(entry)
    assert (request.url, request.method) == (f"{MENU}/graphql", "POST")
    assert request.json is not None
    assert request.json["operationName"] == "ConsumerDispensaries"
    assert request.json["variables"] == {"dispensaryFilter": {"cNameOrID": "green-leaf-denver"}}
    found = adapter.extract(page("dispensary_dispensaries.json", f"{MENU}/graphql"), entry)
    assert (found.platform_store_id, found.catalog_url) == ("disp-0042", f"{MENU}/graphql")
    # the catalog adapter delegates entry points, so by_name(platform) works too
    assert by_name("dispensary").start(entry) == request


def test_dispensary_resolver_refuses_unknown_stores_and_non_menu_urls() -> None:
    resolver = by_name("dispensary-resolver")
    empty = Page(url=f"{MENU}/graphql", text='{"data": {"filteredDispensaries": []}}')
    with pytest.raises(ExtractionError, match="no dispensary"):
        resolver.extract(empty, task(f"{MENU}/dispensary/nope", kind="entry_point"))
    with pytest.raises(ExtractionError, match="not a dispensary menu URL"):
        resolver.start(task(f"{MENU}/", kind="entry_point"))


def test_graphql_errors_are_reported() -> None:
    errors = Page(url=f"{MENU}/graphql", text='{"errors": [{"message": "dispensary not found"}]}')
    with pytest.raises(ExtractionError, match="dispensary not found"):
        extract_page(errors, adapter_name="dispensary")


def test_detection_is_by_content_not_url() -> None:
    anywhere = "https://anything.example/data"
    for name, expected in [
        ("shopify_products.json", "shopify"),
        ("woocommerce_products.json", "woocommerce"),
        ("dispensary_products_page.json", "dispensary"),
        ("dispensary_dispensaries.json", "dispensary-resolver"),
        ("locator.json", "locator"),
        ("feed_social.json", "feeds"),
        ("feed_rss.xml", "feeds"),
        ("feed_atom.xml", "feeds"),
        ("product_rdfa.html", "schema_org"),
    ]:
        adapter = detect(page(name, anywhere))
        assert adapter is not None and adapter.name == expected, name
    assert detect(Page(url=anywhere, text='{"unrelated": true}')) is None
