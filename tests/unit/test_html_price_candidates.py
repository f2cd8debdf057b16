"""Price, currency and availability on HTML pages seen for the first time, extracted as
`crawl-ledger extract FILE` does (a file:// address: no country TLD, no store currency)."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

import pytest

from domain.values import Observation
from ledger.cli import main
from workers.extraction.adapters.base import Page
from workers.extraction.currency import Where, resolve
from workers.extraction.extract import extract_page
from workers.extraction.prices import Money, parse_price

FILE_URL = "file:///tmp/saved-page.html"


def observe(html: str, url: str = FILE_URL) -> Observation:
    _, extraction = extract_page(Page(url=url, text=html, body=html.encode()))
    return extraction.observations[0]


def paid(obs: Observation) -> tuple[Decimal | None, str | None]:
    offer = obs.offers[0]
    price = offer.special_price if offer.special_price is not None else offer.price
    return price, offer.currency


# --- number formats, the same in every source -------------------------------------

META_DECIMAL_COMMA = """<html><head><meta property="og:type" content="product">
<meta property="og:title" content="Kaffeevollautomat">
<meta property="product:price:amount" content="{amount}">
<meta property="product:price:currency" content="EUR"></head>
<body><h1>Kaffeevollautomat</h1></body></html>"""
JSONLD = """<html><head><script type="application/ld+json">{{"@type": "Product",
"name": "Kaffeevollautomat", "offers": {{"@type": "Offer", "price": {amount},
"priceCurrency": "{currency}"}}}}</script></head><body><h1>Kaffeevollautomat</h1></body></html>"""


@pytest.mark.parametrize(("amount", "expected"), [
    ("1.234,56", Decimal("1234.56")), ("12.345.678,90", Decimal("12345678.90")),
    ("1,299.00", Decimal("1299.00")), ("1.234,567", Decimal("1234.57")),
])
def test_grouping_dots_and_a_decimal_comma_read_the_same_in_every_source(
        amount: str, expected: Decimal) -> None:
    assert paid(observe(META_DECIMAL_COMMA.format(amount=amount))) == (expected, "EUR")
    assert paid(observe(JSONLD.format(amount=f'"{amount}"', currency="EUR"))) == (
        expected, "EUR")
    microdata = (f'<html><body><div itemscope itemtype="https://schema.org/Product">'
                 f'<h1 itemprop="name">Kaffeevollautomat</h1><div itemprop="offers" itemscope '
                 f'itemtype="https://schema.org/Offer"><meta itemprop="price" content="{amount}">'
                 f'<meta itemprop="priceCurrency" content="EUR"></div></div></body></html>')
    assert paid(observe(microdata)) == (expected, "EUR")


@pytest.mark.parametrize(("amount", "currency", "expected"), [
    ('"19.995"', "EUR", Decimal("20.00")), ("19.994", "EUR", Decimal("19.99")),
    ('"9.125"', "USD", Decimal("9.13")), ('"1234.5"', "JPY", Decimal("1235")),
    ('"12.3456"', "KWD", Decimal("12.346")),
])
def test_more_decimals_than_the_currency_has_round_half_up_to_its_minor_unit(
        amount: str, currency: str, expected: Decimal) -> None:
    assert paid(observe(JSONLD.format(amount=amount, currency=currency))) == (
        expected, currency)
    assert parse_price(amount.strip('"'), currency, structured=True) == Money(
        expected, currency)


@pytest.mark.parametrize("text", ["1e999", "1E3", "2.5e2 €", "0x10", "0X1F EUR"])
def test_exponent_and_hex_forms_are_no_price(text: str) -> None:
    assert parse_price(text) is None
    assert parse_price(text, "EUR", structured=True) is None
    obs = observe(JSONLD.format(amount=f'"{text}"', currency="EUR"))
    assert [o.price for o in obs.offers if o.price is not None] == []


def test_one_group_of_thousands_in_structured_data_is_grouping_where_the_locale_says_so(
        ) -> None:
    german, english = Where(None, "de", None), Where(None, "en", None)
    assert parse_price("1.234", "EUR", structured=True, where=german) == Money(
        Decimal(1234), "EUR")
    assert parse_price("1.234", "USD", structured=True, where=english) == Money(
        Decimal("1.23"), "USD")


# --- the currency of an ambiguous symbol, without a URL -----------------------------

VISIBLE_ONLY = """<html{lang}><head><title>{name}</title>{meta}</head><body><h1>{name}</h1>
<p>{words}</p><div class="product-price"><span class="price">{price}</span></div>
<button class="add-to-cart">{buy}</button></body></html>"""
DANISH = ("Denne flotte kaffemaskine brygger kaffe til hele familien hver eneste morgen, og "
          "den er nem at gøre ren. Vi sender varen samme dag, og du kan altid returnere den.")
SWEDISH = ("Den här fina kaffebryggaren brygger kaffe till hela familjen varje morgon och är "
           "lätt att rengöra. Vi skickar varan samma dag och du kan alltid returnera den.")
NORWEGIAN = ("Denne fine kaffetrakteren brygger kaffe til hele familien hver morgen, og den er "
             "lett å rengjøre. Vi sender varen samme dag, og du kan alltid returnere den.")


@pytest.mark.parametrize(("lang", "meta", "words", "currency"), [
    (' lang="da"', "", "Flot.", "DKK"),
    (' lang="nb"', "", "Fin.", "NOK"),
    ("", '<meta http-equiv="content-language" content="da-DK">', "Flot.", "DKK"),
    ("", '<meta property="og:locale" content="nb_NO">', "Fin.", "NOK"),
    ("", "", DANISH, "DKK"),
    ("", "", SWEDISH, "SEK"),
    ("", "", NORWEGIAN, "NOK"),
    (' lang="en"', "", DANISH, "DKK"),  # a theme's default lang, the shop's own words
])
def test_kr_takes_the_currency_of_the_pages_language(lang: str, meta: str, words: str,
                                                     currency: str) -> None:
    html = VISIBLE_ONLY.format(lang=lang, meta=meta, name="Kaffemaskine", words=words,
                               price="1.299,00 kr.", buy="Læg i kurv")
    assert paid(observe(html)) == (Decimal("1299.00"), currency)


@pytest.mark.parametrize(("lang", "price", "expected"), [
    (' lang="en-CA"', "$129.00", (Decimal("129.00"), "CAD")),
    (' lang="en-AU"', "$129.00", (Decimal("129.00"), "AUD")),
    (' lang="es-MX"', "$1,299.00", (Decimal("1299.00"), "MXN")),
    (' lang="zh"', "¥129", (Decimal("129"), "CNY")),
    (' lang="ja"', "¥1,290", (Decimal("1290"), "JPY")),
    (' lang="en-ZA"', "R 1 299,00", (Decimal("1299.00"), "ZAR")),
    (' lang="de"', "69,99", (Decimal("69.99"), "EUR")),  # no symbol at all
])
def test_dollar_yen_and_rand_take_the_currency_of_the_pages_language(
        lang: str, price: str, expected: tuple[Decimal, str]) -> None:
    html = VISIBLE_ONLY.format(lang=lang, meta="", name="Coffee maker", words="Nice.",
                               price=price, buy="Add to cart")
    assert paid(observe(html)) == expected


def test_the_country_tld_still_outranks_the_language() -> None:
    html = VISIBLE_ONLY.format(lang=' lang="da"', meta="", name="Kaffemaskine", words=DANISH,
                               price="1.299,00 kr.", buy="Læg i kurv")
    assert paid(observe(html, "https://shop.example.se/kaffe")) == (Decimal("1299.00"), "SEK")


# --- out of stock while a price is still shown; backorder and preorder --------------

SHOWN_PRICE = """<html lang="{lang}"><head>{jsonld}</head><body><h1>{name}</h1>
<div class="product-price"><span class="price">{price}</span></div>{extra}
<button class="btn add-to-cart"{disabled}>{buy}</button></body></html>"""
IN_STOCK_JSONLD = """<script type="application/ld+json">{"@type": "Product", "name": "Wanderschuh",
"offers": {"@type": "Offer", "price": "89.90", "priceCurrency": "EUR",
"availability": "https://schema.org/InStock"}}</script>"""


def shown(lang: str = "de", jsonld: str = "", price: str = "89,90 €", extra: str = "",
          disabled: str = "", buy: str = "In den Warenkorb") -> str:
    return SHOWN_PRICE.format(lang=lang, jsonld=jsonld, name="Wanderschuh", price=price,
                              extra=extra, disabled=disabled, buy=buy)


def test_a_disabled_add_to_cart_beside_a_price_is_out_of_stock() -> None:
    assert observe(shown()).availability == "in_stock"
    assert observe(shown(disabled=" disabled")).availability == "out_of_stock"
    assert observe(shown(disabled=' aria-disabled="true"')).availability == "out_of_stock"
    english = shown(lang="en", price="$89.90", buy="Add to cart", disabled=" disabled")
    assert observe(english).availability == "out_of_stock"


def test_a_buy_control_disabled_until_a_size_is_chosen_says_nothing() -> None:
    sizes = '<select name="size"><option>41</option><option>42</option></select>'
    assert observe(shown(extra=sizes, disabled=" disabled")).availability == "in_stock"


def test_stock_words_and_a_disabled_control_outrank_a_structured_in_stock() -> None:
    sold_out = '<p class="availability">Leider ausverkauft</p>'
    html = shown(jsonld=IN_STOCK_JSONLD, extra=sold_out, disabled=" disabled")
    assert observe(html).availability == "out_of_stock"
    # the control alone (perhaps waiting for a script) does not overrule the data
    assert observe(shown(jsonld=IN_STOCK_JSONLD, disabled=" disabled")).availability == \
        "in_stock"


@pytest.mark.parametrize(("lang", "words", "state"), [
    ("en", "Available on backorder", "backorder"),
    ("en", "Out of stock – available for backorder", "backorder"),
    ("de", "Artikel im Zulauf", "backorder"),
    ("ru", "Под заказ", "backorder"),
    ("en", "Pre-order now: ships in March", "preorder"),
    ("fr", "Disponible en précommande", "preorder"),
    ("ja", "予約受付中", "preorder"),
])
def test_backorder_and_preorder_are_their_own_states(lang: str, words: str,
                                                     state: str) -> None:
    html = shown(lang=lang, extra=f'<p class="stock-status">{words}</p>')
    assert observe(html).availability == state


def test_a_buy_control_that_says_pre_order_is_a_preorder() -> None:
    assert observe(shown(lang="en", price="$89.90", buy="Pre-order")).availability == \
        "preorder"


# --- pages that show several prices --------------------------------------------------

MARKETPLACE = """<html lang="en"><body><div id="dp"><h1 id="title">Steel Water Bottle, 32 oz</h1>
<div class="price"><span class="a-color-price">$25.00</span> <span>Used - Good</span></div>
<div id="olp"><span>Other Sellers on Shop</span> <span class="price">$22.50</span></div>
<div id="price-block"><span class="label">List Price:</span> <span class="price">$49.99</span></div>
<p>Insulated, leak-proof lid.</p>
<div id="buybox"><div><span>Used - Like New</span> <span class="price">$31.50</span></div>
<div><span class="price">($1.25 / Fl Oz)</span></div><div class="price">$0.33 each</div>
<div><span class="price">$39.99</span></div>
<button id="add-to-cart-button">Add to Cart</button><button>Buy Now</button></div>
</div></body></html>"""


def test_a_marketplace_listing_pays_the_buy_box_price_not_list_used_or_unit_prices() -> None:
    offer = observe(MARKETPLACE).offers[0]
    assert (offer.special_price, offer.price, offer.currency) == (
        Decimal("39.99"), Decimal("49.99"), "USD")


def test_an_offer_listing_is_the_price_when_the_page_has_no_buy_box_price() -> None:
    only_others = """<html lang="de"><body><h1>Akku-Bohrschrauber</h1>
    <div id="olp"><span>Neu und gebraucht (7) ab</span> <span class="price">99,12 €</span></div>
    </body></html>"""
    assert paid(observe(only_others)) == (Decimal("99.12"), "EUR")


@pytest.mark.parametrize(("lang", "shown", "expected"), [
    ("en-IN", '<span>MRP ₹1,999</span> <span class="sell">₹1,499</span> <span>(25% OFF)</span>',
     (Decimal("1499"), "INR")),
    ("en-IN", '<span>M.R.P.:</span> <span>₹1,999</span> <b class="price">₹1,499</b>',
     (Decimal("1499"), "INR")),
    ("de", '<span class="uvp">UVP 99,00 €</span><span class="price">79,00 €</span>',
     (Decimal("79.00"), "EUR")),
    ("en-GB", "<p>RRP £30.00</p><p>£20.00</p>", (Decimal("20.00"), "GBP")),
    ("en", "<span>Was $50.00</span> <span>Now $40.00</span>", (Decimal("40.00"), "USD")),
    ("fr", "<p>Prix conseillé : 59,90 €</p><p>49,90 €</p>", (Decimal("49.90"), "EUR")),
    ("ja", "<p>定価 ¥3,300</p><p class='price'>¥2,970</p>", (Decimal("2970"), "JPY")),
])
def test_mrp_uvp_rrp_and_was_beside_the_selling_price_are_the_regular_price(
        lang: str, shown: str, expected: tuple[Decimal, str]) -> None:
    html = (f'<html lang="{lang}"><body><h1>Cotton shirt</h1><div class="pdp-price">{shown}'
            f"</div><button>Add to cart</button></body></html>")
    obs = observe(html)
    assert paid(obs) == expected
    assert obs.offers[0].price is not None and obs.offers[0].price > expected[0]


def test_unit_prices_are_no_candidates() -> None:
    html = """<html lang="en"><body><h1>Pack of 12 pens</h1><div class="price">$0.75 each</div>
    <div class="unit-price">$0.09 / count</div><div class="price">$8.99</div>
    <button>Add to cart</button></body></html>"""
    assert paid(observe(html)) == (Decimal("8.99"), "USD")


SALE_IN_TEXT = """<html lang="de"><head><script type="application/ld+json">{"@type": "Product",
    "name": "Akkuschrauber 18V", "offers": {"@type": "Offer", "price": "99.00",
    "priceCurrency": "EUR", "availability": "https://schema.org/InStock"}}</script></head>
    <body><h1>Akkuschrauber 18V</h1><div class="price-box"><span>UVP 99,00 €</span>
    <span class="price">79,00 €</span></div><button>In den Warenkorb</button></body></html>"""


def test_a_sale_shown_only_in_text_beats_the_regular_price_in_structured_data() -> None:
    offer = observe(SALE_IN_TEXT).offers[0]
    assert (offer.price, offer.special_price, offer.currency) == (
        Decimal("99.00"), Decimal("79.00"), "EUR")


# --- the candidates and why the winner won -------------------------------------------

def test_explain_lists_every_candidate_with_its_evidence_and_the_rule_that_won(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    page = tmp_path / "bottle.html"
    page.write_text(MARKETPLACE, encoding="utf-8")
    assert main(["extract", str(page), "--explain", "--json"]) == 0
    price = next(c for c in json.loads(capsys.readouterr().out) if c["field"] == "price")
    assert price["value"] == "39.99" and price["source"] == "visible"
    assert price["why"].startswith("rule 4")
    described = [value for value, _ in price["alternatives"]]
    chosen = [d for d in described if d.startswith("CHOSEN ")]
    assert len(chosen) == 1 and chosen[0].startswith("CHOSEN 39.99 USD (price:")
    assert "within 40 elements of the buy button" in chosen[0]
    assert any(d.startswith("49.99 USD (regular price:") for d in described)
    assert any(d.startswith("31.50 USD") and "another seller's offer" in d for d in described)
    assert not any(d.startswith(("1.25 USD", "0.33 USD")) for d in described)


def test_explain_names_the_structured_offer_and_the_visible_sale_rule(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    page = tmp_path / "drill.html"
    page.write_text(SALE_IN_TEXT, encoding="utf-8")
    assert main(["extract", str(page), "--explain", "--json"]) == 0
    price = next(c for c in json.loads(capsys.readouterr().out) if c["field"] == "price")
    assert (price["value"], price["why"][:6]) == ("79.00", "rule 2")
    sources = [source for _, source in price["alternatives"]]
    assert sources[0] == "json-ld offer 'default'" and "visible" in sources
    page.write_text(SALE_IN_TEXT.replace("<span>UVP 99,00 €</span>", ""), encoding="utf-8")
    assert main(["extract", str(page), "--explain", "--json"]) == 0
    price = next(c for c in json.loads(capsys.readouterr().out) if c["field"] == "price")
    assert (price["value"], price["why"][:6]) == ("99.00", "rule 3")
    assert price["alternatives"][0][0].startswith("CHOSEN 99.00 EUR")


def test_prices_in_a_carousel_of_other_products_are_no_candidates() -> None:
    cards = "".join(f'<div class="swiper-slide"><a href="/p{n}">Mug {n}</a>'
                    f'<span class="price">{n},00 €</span></div>' for n in range(5, 9))
    html = f"""<html lang="de"><body><h1>Teekanne Steingut</h1>
    <div class="swiper-wrapper">{cards}</div>
    <p>Handgemacht.</p><p>Spülmaschinenfest.</p><div>34,90 €</div>
    <button>In den Warenkorb</button></body></html>"""
    assert paid(observe(html)) == (Decimal("34.90"), "EUR")


def test_the_words_are_identified_only_when_the_declared_language_does_not_decide() -> None:
    asked: list[str] = []

    def words() -> str:
        asked.append("words")
        return "da"

    assert resolve("kr", Where(None, "sv", None, words)) == "SEK" and asked == []
    assert resolve("kr", Where(None, "en", None, words)) == "DKK" and asked == ["words"]
