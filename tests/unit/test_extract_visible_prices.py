"""Visible prices that structured data and simple markup leave unclear."""

from __future__ import annotations

from decimal import Decimal

import pytest

from workers.extraction.adapters.base import Page
from workers.extraction.adapters.visible_marks import before_tax
from workers.extraction.extract import extract_page


def observe(html: str, url: str):  # type: ignore[no-untyped-def]
    _, extraction = extract_page(Page(url=url, text=html, body=html.encode()))
    return extraction.observations[0]


ON_SALE = """<html lang="lv"><body><h1>Soma</h1>
<div itemscope itemtype="http://schema.org/Product"><meta itemprop="name" content="Soma">
<div itemprop="offers" itemscope itemtype="http://schema.org/Offer">
<meta itemprop="priceCurrency" content="EUR"><meta itemprop="price" content="219.99">
<meta itemprop="availability" content="InStock"></div></div>
<div class="price-block"><span class="original-price">EUR219.99</span>
<span class="discount-label">-50%</span>
<div class="product-price"><span class="price">EUR110.00</span></div></div>
<button class="add-to-cart">Add to cart</button></body></html>"""


def test_complete_structured_data_still_yields_to_a_sale_the_page_shows() -> None:
    offer = observe(ON_SALE, "https://shop.example.lv/soma").offers[0]
    assert (offer.price, offer.special_price, offer.currency) == (
        Decimal("219.99"), Decimal("110.00"), "EUR")
    # the same page showing no struck price: the structured price stands
    plain = ON_SALE.replace('<span class="original-price">EUR219.99</span>', "")
    offer = observe(plain, "https://shop.example.lv/soma").offers[0]
    assert (offer.price, offer.special_price) == (Decimal("219.99"), None)


SPLIT_CURRENCY = """<html lang="zh-TW"><body><h1>不鏽鋼碗籃組</h1>
<table><tr><td class="t13"><strong>建議售價</strong> <font size="2"><del>$3200</del></font>
<span class="t13">元</span></td></tr>
<tr><td><strong>一次付清特價</strong> <span style="font:bold 27px Verdana">2320</span>
<span class="t13"> 元 </span></td></tr></table><p>1234</p></body></html>"""

SPLIT_CENTS = """<html lang="ro"><body><h1>Drum unit</h1>
<p class="product-old-price"><s>83<sup>30</sup> <span>Lei</span></s></p>
<p class="product-new-price">63<sup>07</sup> <span>Lei</span></p>
<button>Adaugă în coș</button></body></html>"""


def test_a_number_reads_with_the_currency_set_beside_it_but_cents_are_no_price() -> None:
    offer = observe(SPLIT_CURRENCY, "https://www.example.com.tw/M1.htm").offers[0]
    assert (offer.price, offer.special_price, offer.currency) == (3200, 2320, "TWD")
    offer = observe(SPLIT_CENTS, "https://www.example.ro/drum").offers[0]
    assert (offer.price, offer.special_price, offer.currency) == (
        Decimal("83.30"), Decimal("63.07"), "RON")


ALL_OLD = """<html lang="sl"><body><h1>Bralne leče</h1>
<ul id="price-list"><li class="price"><span class="price-old-live">40.00€</span></li>
<li class="price-tax small">Brez DDV: <span class="price-tax-live">36.53€</span></li></ul>
<button>Dodaj v košarico</button></body></html>"""


def test_a_price_named_old_with_no_lower_price_beside_it_is_the_price() -> None:
    offer = observe(ALL_OLD, "https://www.example.si/lece").offers[0]
    assert (offer.price, offer.special_price, offer.currency) == (Decimal("40.00"), None, "EUR")
    # struck through for real, the only price is no price to pay
    struck = ALL_OLD.replace('<span class="price-old-live">40.00€</span>', "<del>40.00€</del>")
    struck = struck.replace('<li class="price-tax small">Brez DDV: <span class="price-tax-live">'
                            '36.53€</span></li>', "")
    _, extraction = extract_page(Page(url="https://www.example.si/lece", text=struck,
                                      body=struck.encode()))
    assert extraction.observations == ()


@pytest.mark.parametrize(("text", "around", "marked", "net"), [
    ("4,92 €", "zzgl. MwSt (21%): 4,92 €", "price", True),
    ("5,95 €", "Inkl. MwSt (21%): 5,95 €", "price", False),
    ("5,95 €", "5,95 € inkl. MwSt., zzgl. Versandkosten", "price", False),
    ("36.53€", "Brez DDV: 36.53€", "price-tax-live", True),
    ("4386,00 €", "bez DPH 4386,00 €", "price", True),
    ("99,00 €", "99,00 € HT", "prix", True),
    ("£10.00", "£10.00 ex VAT (£12.00 inc VAT)", "price", False),  # another amount beside it
    ("£10.00", "£10.00", "price price-excluding-tax", True),
])
def test_before_tax_labels(text: str, around: str, marked: str, net: bool) -> None:
    assert before_tax(text, around, marked) is net


NESTED_OFFER = """<html lang="it"><body>
<div itemscope itemtype="https://schema.org/Product"><h1 itemprop="name">Angel Teddy Bear</h1>
<div itemprop="offers" itemscope itemtype="https://schema.org/Offer">
<span itemprop="itemCondition">Nuovo</span>
<div itemprop="offers" itemscope itemtype="https://schema.org/Offer">
<span itemprop="price" content="12.99">GBP 12,99</span>
<meta itemprop="priceCurrency" content="GBP">
<link itemprop="availability" href="https://schema.org/InStock"></div></div></div>
<div class="vi-price">Circa EUR 19,44</div></body></html>"""


def test_an_offer_without_a_price_wrapping_the_priced_offer_is_read_through() -> None:
    obs = observe(NESTED_OFFER, "https://www.ebay.example/itm/1")
    assert (obs.offers[0].price, obs.offers[0].currency, obs.availability) == (
        Decimal("12.99"), "GBP", "in_stock")
    assert obs.attributes["source.price"] == "microdata"


SOCIAL = """<html><head><title>좋은생각 : 정기구독 1년 - 티몬</title>
<meta property="og:title" content="좋은생각 : 정기구독 1년">{price}</head><body>
<section><h1>뽀로로 놀이책</h1><span class="price">28,800</span></section>
<h2>좋은생각 : 정기구독 1년</h2><button>구매하기</button></body></html>"""


@pytest.mark.parametrize(("meta", "url", "price", "currency"), [
    ('<meta property="og:price" content="30,000원~">', "https://deal.example.co.kr/1",
     Decimal("30000"), "KRW"),
    ('<meta name="twitter:label1" content="Price"><meta name="twitter:data1" content="€344.00">',
     "https://shop.example.ie/p", Decimal("344.00"), "EUR"),
    ('<meta property="product:price" content="97,47">', "https://shop.example.de/p",
     Decimal("97.47"), "EUR"),
])
def test_a_price_in_the_social_preview_tags_is_the_shops_own(
        meta: str, url: str, price: Decimal, currency: str) -> None:
    offer = observe(SOCIAL.format(price=meta), url).offers[0]
    assert (offer.price, offer.currency) == (price, currency)


def test_a_twitter_card_datum_labelled_otherwise_is_no_price() -> None:
    meta = '<meta name="twitter:label1" content="Availability"><meta name="twitter:data1" ' \
           'content="7 in stock">'
    offer = observe(SOCIAL.format(price=meta), "https://deal.example.co.kr/1").offers[0]
    assert offer.price == Decimal("28800")


OPTION_DELTA = """<html lang="sl"><body><h1>Potapljaška maska</h1>
<ul id="price-list"><li class="price"><span class="price-old-live">100.00€</span></li>
<li class="price-tax small">Brez DDV: <span class="price-tax-live">81.97€</span></li></ul>
<label class="radio">Brez dioptrije <span class="price">(-40.00€)</span></label>
<label class="radio">Z dioptrijo <span class="price">(+15,00 €)</span></label>
<button>Dodaj v košarico</button></body></html>"""


def test_an_options_signed_difference_is_no_price() -> None:
    offer = observe(OPTION_DELTA, "https://www.example.si/maska").offers[0]
    assert (offer.price, offer.special_price) == (Decimal("100.00"), None)


BUY_BOX = """<html lang="fr"><body>
<div id="buybox"><span id="price_inside_buybox" class="a-color-price">12,44 €</span>
<input type="submit" value="Ajouter au panier"></div>
<h1 id="productTitle">Raccord en T, 20 pièces</h1>
<ul class="swatches"><li><span class="a-color-secondary">Tuyau 3 mm</span>
<span class="a-price twisterSwatchPrice">12,39 €</span></li></ul>
<div class="bulk"><span id="bulkAcquire-total__price" class="a-price">Total : 37,32 €</span></div>
<table><tr><td>Prix :</td><td><span id="priceblock_ourprice" class="a-price">12,44 €</span>
</td></tr></table></body></html>"""


def test_the_price_marked_as_the_products_own_beats_a_variant_swatch_beside_the_title() -> None:
    offer = observe(BUY_BOX, "https://www.example.fr/dp/B08").offers[0]
    assert (offer.price, offer.currency) == (Decimal("12.44"), "EUR")


AUCTION = """<html lang="en"><head><script type="application/ld+json">
{"@type": "Product", "name": "Vintage bag", "offers": {"@type": "Offer", "price": 90,
 "priceCurrency": "USD", "availability": "http://schema.org/InStock",
 "availabilityEnds": "2020-12-12T23:30:00.000Z"}}</script></head><body>
<h1>Vintage bag</h1><div class="status"><span class="price">$400</span>
<span class="count">5 bids</span></div><p>Estimate $500 - $700</p>
<button data-e2e="itemPagePlaceBidButton">{button}</button></body></html>"""


def test_an_auctions_current_bid_beside_the_bid_button_is_the_price() -> None:
    obs = observe(AUCTION.replace("{button}", "Place Bid"), "https://auctions.example.com/item/1")
    assert (obs.offers[0].price, obs.offers[0].currency) == (Decimal("400"), "USD")
    assert obs.attributes["source.price"] == "visible current bid beside the bid button"
    # a shop's buy button: the structured price stands
    obs = observe(AUCTION.replace("{button}", "Add to cart"), "https://auctions.example.com/item/1")
    assert obs.offers[0].price == Decimal("90")


@pytest.mark.parametrize(("text", "amount"), [
    ("$400 5 bids", Decimal("400")), ("12,00 € 3 Stück", Decimal("12.00")),
    ("1 299 Kč", Decimal("1299")), ("1 299 000 ₽", Decimal("1299000")),
])
def test_a_count_after_an_amount_is_not_a_thousands_group(text: str, amount: Decimal) -> None:
    from workers.extraction.prices import parse_price

    money = parse_price(text)
    assert money is not None and money.amount == amount


CARDS_FIRST = """<html lang="ko"><head><title>좋은생각 정기구독 1년 - 티몬</title></head><body>
<section><h1>뽀로로 놀이책 모음</h1><span class="price">28,800원</span></section>
<section><h1>카레이싱 최후의 비밀</h1><span class="price">19,000원</span></section>
<div>{filler}</div>
<h2 class="deal_title_main">좋은생각 정기구독 1년</h2>
<p class="deal_price_sell"><strong class="number_unit">30,000<sub>원</sub></strong></p>
<button>구매하기</button></body></html>"""


def test_the_heading_the_title_names_is_the_products_not_the_first_card() -> None:
    html = CARDS_FIRST.replace("{filler}", "<p>상품 정보</p>" * 60)
    obs = observe(html, "https://deal.example.co.kr/1")
    assert obs.name == "좋은생각 정기구독 1년"
    assert (obs.offers[0].price, obs.offers[0].currency) == (Decimal("30000"), "KRW")


LABELLED = """<html><body><h1>Teak sideboard</h1><p>Ref. 2231, 180 cm wide</p>
<p><font size="2"><b>Price:</b>&nbsp;60</font></p><p>Postage: £7 to mainland UK</p>
<form><input type="submit" value="Add to basket"></form></body></html>"""


def test_a_number_labelled_as_the_price_is_the_price() -> None:
    offer = observe(LABELLED, "https://www.example.co.uk/sideboard").offers[0]
    assert (offer.price, offer.currency) == (Decimal("60"), "GBP")


TIERS = """<html><head><script type="application/ld+json">
{"@type": "Product", "name": "Acrylic bead", "sku": "H206",
 "offers": {"@type": "Offer", "priceCurrency": "USD", "availability": "InStock",
  "priceSpecification": [
   {"@type": "UnitPriceSpecification", "price": "3.46"},
   {"@type": "UnitPriceSpecification", "price": "2.49",
    "eligibleQuantity": {"@type": "QuantitativeValue", "minValue": 15}},
   {"@type": "UnitPriceSpecification", "price": "1.99",
    "eligibleQuantity": {"@type": "QuantitativeValue", "minValue": 50, "maxValue": 99}}]}}
</script></head><body><h1>Acrylic bead</h1></body></html>"""


def test_quantity_tiers_are_offers_of_their_own_after_the_price() -> None:
    obs = observe(TIERS, "https://beads.example.com/h206")
    assert [(o.option, o.price, o.pricing_type) for o in obs.offers] == [
        ("default", Decimal("3.46"), "regular"), ("default ×15+", Decimal("2.49"), "tier"),
        ("default ×50+", Decimal("1.99"), "tier")]
    assert {o.currency for o in obs.offers} == {"USD"}


SHOPIFY_JSON = """<html lang="en"><head><title>Trail Runner – Northpeak</title></head><body>
<h1>Trail Runner</h1><span class="money">$89.00</span>
<script type="application/json" data-product-json>{"id": 42, "title": "Trail Runner",
 "vendor": "Northpeak", "type": "Shoes", "variants": [
  {"id": 1, "title": "US 9", "price": 8900, "compare_at_price": 11900, "available": true},
  {"id": 2, "title": "US 10", "price": 11900, "compare_at_price": null, "available": false}]}
</script><script>window.ShopifyAnalytics = {}; window.ShopifyAnalytics.meta = {};
window.ShopifyAnalytics.meta.currency = 'USD';</script></body></html>"""

ANALYTICS_META = """<html lang="pt-PT"><body><h1>Microondas 800W</h1>
<script>window.ShopifyAnalytics.meta.currency = 'EUR';
var meta = {"product":{"id":1738666147883,"vendor":"Panasonic","type":"Microondas",
"variants":[{"id":15856354164779,"price":10900,"name":"Microondas 800W","public_title":null,
"sku":"1236291"}]},"page":{"pageType":"product"}};
for (var attr in meta) {}</script></body></html>"""

WOO_VARIATIONS = """<html lang="de"><body><h1>Wanderhemd</h1>
<form class="variations_form cart" data-product_variations='[{"attributes":
 {"attribute_pa_size": "m"}, "display_price": 39.9, "display_regular_price": 49.9,
 "is_in_stock": false, "variation_id": 7}, {"attributes": {"attribute_pa_size": "l"},
 "display_price": 49.9, "display_regular_price": 49.9, "is_in_stock": false,
 "variation_id": 8}]'></form></body></html>"""

LD_NO_STOCK = """<html><head><script type="application/ld+json">{"@type": "Product",
 "name": "Trail Runner", "offers": {"@type": "Offer", "price": "89.00",
 "priceCurrency": "USD"}}</script></head><body><h1>Trail Runner</h1>
<script type="application/json" id="ProductJson-main">{"id": 42, "title": "Trail Runner",
 "variants": [{"title": "US 9", "price": 8900, "available": false}]}</script></body></html>"""


def test_a_shopify_themes_product_json_is_the_product_when_schema_org_names_none() -> None:
    obs = observe(SHOPIFY_JSON, "https://northpeak.example/products/trail-runner")
    assert obs.attributes["source.price"] == "Shopify product JSON"
    assert [(o.option, o.price, o.special_price, o.currency, o.availability)
            for o in obs.offers] == [("US 9", Decimal("119"), Decimal("89"), "USD", "in_stock"),
                                     ("US 10", Decimal("119"), None, "USD", "out_of_stock")]
    assert (obs.brand, obs.category, obs.availability) == ("Northpeak", "Shoes", "in_stock")
    meta = observe(ANALYTICS_META, "https://loja.example.pt/products/microondas")
    assert (meta.name, meta.offers[0].price, meta.offers[0].currency) == (
        "Microondas 800W", Decimal("109"), "EUR")


def test_woocommerce_variations_give_prices_and_stock() -> None:
    obs = observe(WOO_VARIATIONS, "https://laden.example.de/produkt/wanderhemd/")
    assert [(o.option, o.price, o.special_price, o.currency) for o in obs.offers] == [
        ("m", Decimal("49.9"), Decimal("39.9"), "EUR"), ("l", Decimal("49.9"), None, "EUR")]
    assert obs.availability == "out_of_stock"
    assert obs.attributes["source.availability"] == "WooCommerce variations"


def test_platform_json_says_the_stock_schema_org_left_out() -> None:
    obs = observe(LD_NO_STOCK, "https://northpeak.example/products/trail-runner")
    assert (obs.offers[0].price, obs.availability) == (Decimal("89.00"), "out_of_stock")
    assert obs.attributes["source.availability"] == "Shopify product JSON"
    assert obs.attributes["source.price"] == "json-ld"
