"""Dispensary menu platform adapters: detection by content, offers, pagination.

The payloads here are minimal records in each platform's published response
shape (field names as the APIs return them; names and prices invented); the
real menus they were modelled on are exercised in test_dispensary_corpus.py.
"""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import corpus_files
import menu_scoring as ms
import pytest

from domain.values import CrawlTask
from workers.extraction.adapters import ADAPTERS, detect
from workers.extraction.adapters.base import Page, Request
from workers.extraction.extract import extract_page

PAGES = Path(__file__).parent.parent / "fixtures" / "pages"
MENUS = "dispensary/manifest.json"
NEW = ("dutchie-plus", "sweed", "dispense", "jane", "weedmaps")


def page(payload: Any, url: str = "https://menu.invalid/api", request: Request | None = None) -> Page:
    return Page(url=url, text=json.dumps(payload), request=request)


def task(url: str = "https://menu.invalid/api", **extra: str) -> CrawlTask:
    return CrawlTask(job_id="j", lease_id="l", attempt=1, kind="catalog", url=url, **extra)


def plus_product(pid: str, name: str, *variants: dict[str, Any]) -> dict[str, Any]:
    return {"id": pid, "name": name, "brand": {"name": "Acme"}, "category": "FLOWER",
            "strainType": "HYBRID", "potencyThc": {"formatted": "21%"}, "variants": list(variants)}


PLUS_GRAPHQL = {"data": {"menu": {"products": [
    plus_product("p1", "Blue Dream", {"option": "3.5g", "priceRec": 40, "specialPriceRec": 32, "quantity": 4},
                 {"option": "7g", "priceRec": 75, "specialPriceRec": None, "quantity": 0}),
    plus_product("p2", "Tincture", {"option": "N/A", "priceMed": 30, "specialPriceMed": 27, "quantity": 2}),
]}}}
PLUS_LIST = [plus_product("p3", "Gummies", {"option": "100mg", "priceRec": 20, "priceMed": 18, "quantity": 9})]
LISTING = [{
    "jointId": "j1", "globalProductId": "g1", "name": "Lotion", "brandName": "Avexia", "category": "TOPICALS",
    "variants": [
        {"option": ".1g", "price": "55.00", "specialPrice": "35.75", "menuType": "RECREATIONAL", "quantity": "8"},
        {"option": ".1g", "price": "50.00", "specialPrice": None, "menuType": "MEDICAL", "quantity": "8"},
    ],
}]
SWEED = {"page": 1, "pageSize": 2, "total": 3, "list": [
    {"id": 11, "name": "Bites", "brand": {"name": "Select"}, "category": {"name": "Edibles"},
     "images": ["https://img.invalid/1.jpg"],
     "variants": [{"id": 1, "name": "10mg ea | 10-Pack", "price": 20.0, "promoPrice": 14.0, "availableQty": 24,
                   "unitSize": {"value": 10.0, "unitAbbr": "MG"}}]},
    {"id": 12, "name": "Screen", "variants": [
        {"id": 2, "name": "Each", "price": 1.0, "promoPrice": None, "availableQty": 0,
         "unitSize": {"value": 1.0, "unitAbbr": "EA"}},
        {"id": 3, "name": "Pack", "price": 5.0, "promoPrice": 5.0, "availableQty": 3,
         "unitSize": {"value": 5.0, "unitAbbr": "EA"}}]},
]}


def dispense_record(pid: str, weight: str, price: float, paid: float, **extra: Any) -> dict[str, Any]:
    return {"id": pid, "name": "Pearls", "venue": "v1", "productCategoryName": "Edibles", "brand": {"name": "Gron"},
            "weightFormatted": weight, "price": price, "priceWithDiscounts": paid, "quantity": 5, **extra}


DISPENSE = {"count": 3, "skip": 0, "limit": 2, "data": [
    dispense_record("d1", "10mg", 7, 7, variants=[dispense_record("d1", "10mg", 7, 7),
                                                   dispense_record("d2", "100mg", 30, 24)]),
    dispense_record("d3", "3.5g", 45, 36),
]}
WEEDMAPS = {"meta": {"page": 1, "per_page": 2, "total": 5}, "data": [
    {"id": 1, "type": "menu_item", "links": {"order": "https://weedmaps.invalid/menu/a"},
     "attributes": {"name": "Cart", "brand_name": "Kushie", "category_name": "Vape", "sale": {"type": "percentage",
                    "amount": 30}, "variants": [], "prices": {"price_unit": 39.83, "price_gram": 0}}},
    {"id": 2, "type": "menu_item", "attributes": {
        "name": "Preroll", "sale": {"type": "amount", "amount": 1}, "inventory_quantity": 0,
        "variants": [{"label": "1/2 g", "price": {"amount": "4.00", "currency": "USD"}},
                     {"label": "1 g", "price": {"amount": "8.00", "currency": "USD"}}]}},
]}


def jane_record(pid: int, name: str, weights: list[str], **prices: Any) -> dict[str, Any]:
    """A Jane search record (the fields read; every weight slot's special is {} unless given)."""
    specials = {f"special_price_{w}": {} for w in ("each", "gram", "eighth_ounce", "quarter_ounce")}
    return {"product_id": pid, "objectID": pid + 30000000, "name": name, "brand": "Insa", "kind": "flower",
            "category": "hybrid", "kind_subtype": "Premium", "available_weights": weights, "percent_thc": 32.83,
            "image_urls": [f"https://product-assets.iheartjane.invalid/{pid}.jpeg"], "store_id": 2913,
            "max_cart_quantity_eighth_ounce": 7, **specials, **prices}


JANE_RECORDS = [
    jane_record(1, "Cereal Milk", ["eighth ounce", "quarter ounce"], price_eighth_ounce=45, price_quarter_ounce=80,
                discounted_price_eighth_ounce=33.75,
                special_price_eighth_ounce={"price": "45.0", "discount_type": "percent", "discount_price": "33.75"}),
    jane_record(2, "Animal CKE", ["quarter ounce"], price_quarter_ounce=35, discounted_price_quarter_ounce=35,
                special_price_quarter_ounce={"price": "35.0", "discount_type": "dollar_amount",
                                             "discount_price": "35.0", "special_custom_badge": "FRESH DROP!"}),
    jane_record(3, "Mints", [], kind="edible", price_each=20,
                special_price_each={"price": "20.0", "discount_type": "percent", "discount_price": "15.0"}),
]
#: a menu search answer: every product's id, the first page of them with its record
JANE = {"products": [
    *({"ad_token": "t", "object_id": str(r["objectID"]), "product_id": r["product_id"], "search_attributes": r}
      for r in JANE_RECORDS),
    {"ad_token": "t", "object_id": "30000004", "product_id": 4},
    {"ad_token": "t", "object_id": "30000005", "product_id": 5},
]}

SHAPES = {
    "plus-graphql": (PLUS_GRAPHQL, "dutchie-plus"),
    "plus-list": (PLUS_LIST, "dutchie-plus"),
    "dutchie-listing": (LISTING, "dutchie-plus"),
    "sweed": (SWEED, "sweed"),
    "sweed-list": (SWEED["list"], "sweed"),
    "dispense": (DISPENSE, "dispense"),
    "dispense-list": (DISPENSE["data"], "dispense"),
    "weedmaps": (WEEDMAPS, "weedmaps"),
    "jane": (JANE, "jane"),
    "jane-list": (JANE["products"], "jane"),
    "jane-algolia": ({"hits": JANE_RECORDS, "nbHits": 3, "page": 0}, "jane"),
}


def new_adapters() -> list[Any]:
    return [adapter for adapter in ADAPTERS if adapter.name in NEW]


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_each_platform_shape_is_recognised_by_its_adapter_only(shape: str) -> None:
    payload, owner = SHAPES[shape]
    recognised = {adapter.name for adapter in new_adapters() if adapter.detects(page(payload))}
    assert recognised == {owner}
    found = detect(page(payload))
    assert found is not None and found.name == owner


@pytest.mark.parametrize("fixture", sorted(path.name for path in PAGES.iterdir()))
def test_existing_fixture_pages_are_left_to_the_older_adapters(fixture: str) -> None:
    text = (PAGES / fixture).read_text("utf-8", errors="replace")
    fixture_page = Page(url=f"https://shop.invalid/{fixture}", text=text)
    assert not [adapter.name for adapter in new_adapters() if adapter.detects(fixture_page)]
    found = detect(fixture_page)
    assert found is None or found.name not in NEW


@pytest.mark.parametrize("corpus", sorted(e["file"] for e in corpus_files.manifest(MENUS)
                                          if e["platform"] in ms.ADAPTER_FOR))
def test_corpus_payloads_are_claimed_by_one_adapter(corpus: str) -> None:
    present = corpus_files.present_or_skip(corpus_files.manifest(MENUS), MENUS)
    if corpus not in {entry["file"] for entry in present}:
        pytest.skip(f"no bytes for dispensary/{corpus}")
    text = corpus_files.content(f"dispensary/{corpus}").decode("utf-8")
    corpus_page = Page(url="https://corpus.invalid/menu", text=text)
    assert len([adapter for adapter in ADAPTERS if adapter.detects(corpus_page)]) == 1


def test_dutchie_plus_special_price_is_what_you_pay_and_each_menu_keeps_its_price() -> None:
    adapter, found = extract_page(page(PLUS_GRAPHQL), task())
    dream, tincture = found.observations
    eighth, quarter = dream.offers
    assert (eighth.option, eighth.price, eighth.special_price, eighth.currency) == (
        "3.5g", Decimal("40"), Decimal("32"), "USD")
    assert (quarter.price, quarter.special_price, quarter.availability) == (Decimal("75"), None, "out_of_stock")
    assert (dream.brand, dream.quantity, dream.availability, dream.attributes["thc"]) == ("Acme", 4, "in_stock", "21%")
    (only,) = tincture.offers
    assert (only.price, only.special_price, only.pricing_type) == (Decimal("30"), Decimal("27"), "medical")
    (gummies,) = extract_page(page(PLUS_LIST), task())[1].observations
    assert [(o.option, o.pricing_type, o.price) for o in gummies.offers] == [
        ("100mg", "rec", Decimal("20")), ("100mg", "medical", Decimal("18"))]
    assert gummies.quantity == 9  # one stock, sold on two menus


def test_dutchie_listing_keeps_both_menus_and_counts_string_quantities_once() -> None:
    _, found = extract_page(page(LISTING), task())
    (lotion,) = found.observations
    rec, medical = lotion.offers
    assert (lotion.provider_product_id, lotion.brand, lotion.quantity) == ("j1", "Avexia", 8)
    assert (rec.option, rec.pricing_type, rec.price, rec.special_price, rec.quantity) == (
        ".1g", "rec", Decimal("55.00"), Decimal("35.75"), 8)
    assert (medical.option, medical.pricing_type, medical.price, medical.special_price) == (
        ".1g", "medical", Decimal("50.00"), None)


def test_sweed_promo_price_counts_only_below_the_price_and_next_page_reposts() -> None:
    request = Request("https://sweed.invalid/_api/proxy/Products/GetProductList", method="POST",
                      json={"page": 1, "pageSize": 2, "filters": {"category": [7]}})
    _, found = extract_page(page(SWEED, request=request), task())
    bites, screen = found.observations
    assert (bites.offers[0].option, bites.offers[0].price, bites.offers[0].special_price) == (
        "10mg ea | 10-Pack", Decimal("20.0"), Decimal("14.0"))
    assert (bites.category, bites.image_url) == ("Edibles", "https://img.invalid/1.jpg")
    each, pack = screen.offers
    assert (each.special_price, each.availability, pack.special_price) == (None, "out_of_stock", None)
    assert found.next_request == Request(request.url, method="POST",
                                         json={"page": 2, "pageSize": 2, "filters": {"category": [7]}})


def test_a_saved_response_wrapped_in_an_envelope_is_still_read() -> None:
    # a menu downloader's record: its own metadata, the Sweed response under "products"
    saved = {"timestamp": "20251126_170555", "dispensary": "muv", "store_id": "298", "product_count": 0,
             "products": {"filters": [], "page": 1, "pageSize": 100, "total": 2, "list": SWEED["list"]}}
    adapter, found = extract_page(page(saved), task())
    assert adapter.name == "sweed"
    assert [obs.name for obs in found.observations] == ["Bites", "Screen"]
    assert found.observations[0].offers[0].special_price == Decimal("14.0")


def test_dispense_offers_each_size_once_at_the_discounted_price_and_pages_by_skip() -> None:
    url = "https://api.dispenseapp.invalid/2023-03/products?venueId=v1&limit=2&skip=0"
    _, found = extract_page(page(DISPENSE, url=url), task())
    pearls, flower = found.observations
    assert [(o.option, o.price, o.special_price) for o in pearls.offers] == [
        ("10mg", Decimal("7"), None), ("100mg", Decimal("30"), Decimal("24"))]
    assert (flower.offers[0].special_price, pearls.quantity) == (Decimal("36"), 10)
    assert found.next_request == Request(
        "https://api.dispenseapp.invalid/2023-03/products?venueId=v1&limit=2&skip=2")


def test_weedmaps_sales_and_weight_slots_and_next_page() -> None:
    url = "https://api-g.weedmaps.invalid/discovery/v1/listings/dispensaries/x/menu_items?page=1&page_size=2"
    _, found = extract_page(page(WEEDMAPS, url=url), task())
    cart, preroll = found.observations
    (unit,) = cart.offers
    assert (unit.option, unit.price, unit.special_price) == ("default", Decimal("39.83"), Decimal("27.88"))
    assert (cart.url, cart.brand) == ("https://weedmaps.invalid/menu/a", "Kushie")
    assert [(o.option, o.special_price, o.availability) for o in preroll.offers] == [
        ("1/2 g", Decimal("3.00"), "out_of_stock"), ("1 g", Decimal("7.00"), "out_of_stock")]
    assert found.next_request == Request(url.replace("page=1", "page=2"))
    last = {**WEEDMAPS, "meta": {"page": 3, "per_page": 2, "total": 5}}
    assert extract_page(page(last, url=url), task())[1].next_request is None


def test_weedmaps_crawls_start_at_the_listing_menu_items_api() -> None:
    adapter = next(a for a in ADAPTERS if a.name == "weedmaps")
    start = adapter.start(task("https://weedmaps.com/dispensaries/score-420-albuquerque/menu"))
    assert start == Request(
        "https://api-g.weedmaps.com/discovery/v1/listings/dispensaries/score-420-albuquerque/menu_items"
        "?page=1&page_size=100"
    )
    api = "https://api-g.weedmaps.com/discovery/v1/listings/deliveries/x/menu_items?page=3"
    assert adapter.start(task(api)) == Request(api)
    assert adapter.start(task("https://shop.invalid/dispensaries/x")) == Request("https://shop.invalid/dispensaries/x")


def test_jane_offers_each_weight_at_its_special_and_skips_bare_ids() -> None:
    adapter, found = extract_page(page(JANE), task())
    assert adapter.name == "jane"
    milk, cke, mints = found.observations  # the two bare ids are no products
    assert [(o.option, o.price, o.special_price, o.currency) for o in milk.offers] == [
        ("eighth ounce", Decimal("45"), Decimal("33.75"), "USD"), ("quarter ounce", Decimal("80"), None, "USD")]
    assert (milk.provider_product_id, milk.brand, milk.category, milk.image_url) == (
        "1", "Insa", "flower", "https://product-assets.iheartjane.invalid/1.jpeg")
    assert dict(milk.attributes) == {"strain_type": "hybrid", "subcategory": "Premium", "thc": "32.83%",
                                     "store_id": "2913"}
    # a cart limit is no stock count: nothing is said of availability
    assert (milk.availability, milk.quantity, milk.offers[0].availability) == ("unknown", None, None)
    (fresh,) = cke.offers  # a special of 0 off is no special
    assert (fresh.option, fresh.price, fresh.special_price) == ("quarter ounce", Decimal("35"), None)
    (each,) = mints.offers  # sold by the piece: no weights, price_each, the special's discount_price
    assert (each.option, each.price, each.special_price, mints.category) == (
        "each", Decimal("20"), Decimal("15.0"), "edible")


def test_jane_algolia_hits_are_read_flat_and_menu_search_asks_for_the_next_page() -> None:
    _, hits = extract_page(page({"hits": JANE_RECORDS}), task())
    assert [obs.name for obs in hits.observations] == ["Cereal Milk", "Animal CKE", "Mints"]
    assert hits.next_request is None
    url = "https://dmerch.iheartjane.invalid/v2/smart"
    request = Request(url, method="POST", json={"store_id": 2913, "page": 0, "page_size": 3})
    found = extract_page(page(JANE, request=request), task())[1]
    assert found.next_request == Request(url, method="POST", json={"store_id": 2913, "page": 1, "page_size": 3})
    last = Request(url, method="POST", json={"store_id": 2913, "page": 1, "page_size": 3})
    assert extract_page(page(JANE, request=last), task())[1].next_request is None  # 5 listed, 6 asked
