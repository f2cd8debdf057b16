"""Field-by-field extraction records where each value came from (`source.<field>` on
the observation, hence on every Observed event), and `extract --explain` shows the
chosen value, its source and the alternatives that lost."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

import pytest

from ledger.cli import main
from workers.extraction.adapters.base import Page
from workers.extraction.extract import extract_page

JSONLD = """<html lang="de-DE"><head><script type="application/ld+json">
{"@type": "Product", "name": "Lampe", "offers": {"@type": "Offer", "price": "49.00"}}
</script></head><body><h1>Lampe</h1><span class="price">49,00 €</span>
<p class="availability">Auf Lager</p><button>In den Warenkorb</button></body></html>"""

VISIBLE = """<html lang="sv-SE"><body><nav><span class="price">9 kr</span></nav>
<h1 class="product-title">Kaffekopp</h1>
<div class="product-price"><del class="price-old">149 kr</del>
<span class="price-now">119 kr</span></div>
<div class="stock">Slutsåld</div></body></html>"""


def observe(html: str, url: str):  # type: ignore[no-untyped-def]
    _, extraction = extract_page(Page(url=url, text=html, body=html.encode()))
    return extraction.observations[0]


def test_structured_values_are_completed_from_the_page_with_their_sources() -> None:
    obs = observe(JSONLD, "https://shop.example.de/lampe")
    offer = obs.offers[0]
    assert (offer.price, offer.currency, obs.availability) == (49, "EUR", "in_stock")
    assert obs.attributes["source.price"] == "json-ld"
    assert obs.attributes["source.currency"] == "visible, beside this price"
    assert obs.attributes["source.availability"] == "visible"


def test_a_page_without_structured_data_is_read_as_a_visitor_sees_it() -> None:
    obs = observe(VISIBLE, "https://butik.example.se/kaffekopp")
    offer = obs.offers[0]
    assert obs.name == "Kaffekopp"
    assert (offer.price, offer.special_price, offer.currency) == (149, 119, "SEK")
    assert obs.availability == "out_of_stock"
    assert obs.attributes["source.name"] == "visible heading"
    assert obs.attributes["source.price"] == "visible"


NESTED_STOCK = """<html lang="en"><body><h1>Relay Module</h1>
<div id="buybox"><span class="a-price">$8.99</span>
<div id="availability_feature_div"><div id="availability"><span>In Stock</span></div></div>
<button id="add-to-cart-button">Add to Cart</button>
<div class="a-alert-inline-error"><span>${cardName} not available for the seller you chose</span></div>
</div></body></html>"""

HIDDEN_MESSAGES = """<html lang="en"><body><h1>Paperback</h1><span class="price">$10.59</span>
<div class="box is-hidden"><p>Sold out: join the waiting list</p></div>
<p style="display: none">Cancel your pre-orders at any time</p>
<button>Add to Cart</button></body></html>"""

NO_HEADING = """<html lang="en"><head><title>Deluxe Mattress | Beds Ltd</title></head><body>
<div class="left"><h3>Free Information</h3><p>Call us today</p></div>
<div class="productPrice">From &pound;1,049.00</div>
<form><select><option>90 x 200 cm</option></select>
<input type="submit" value="Add to Basket"></form></body></html>"""


def test_the_nearest_marking_of_a_stock_line_decides_and_templates_are_not_read() -> None:
    # "In Stock" sits in an availability box inside a "feature" container: the nearer
    # availability box decides; the unrendered "${cardName} not available" says nothing
    obs = observe(NESTED_STOCK, "https://shop.example.com/relay")
    assert obs.availability == "in_stock"
    assert obs.attributes["source.availability"] == "visible"


def test_messages_the_markup_hides_are_not_read_as_the_stock_line() -> None:
    obs = observe(HIDDEN_MESSAGES, "https://books.example.com/paperback")
    assert obs.availability == "in_stock"  # the enabled buy button
    shown = HIDDEN_MESSAGES.replace(' class="box is-hidden"', "")
    assert observe(shown, "https://books.example.com/paperback").availability == "out_of_stock"


UNKNOWN_CODE = """<html><body><h1>Battery BL-44JN</h1>
<div itemprop="offers" itemscope itemtype="http://schema.org/Offer">
<meta content="UAN" itemprop="priceCurrency">
<span content="253" itemprop="price" class="totalPrice">253.0 грн</span>
<link itemprop="availability" href="http://schema.org/InStock"></div></body></html>"""

REGULAR_PRICE = """<html lang="sk"><body><h1>Westway Trainers</h1><p>SKLADOM</p>
<div class="price-box"><span class="regular-price"><span class="price">32,00 €</span></span></div>
<ul class="sizes"><li><span class="size">38 sold out</span></li><li><span class="size">40</span></li></ul>
<button>Do košíka</button></body></html>"""


def test_a_currency_code_that_is_no_iso_code_gives_way_to_the_symbol_shown() -> None:
    offer = observe(UNKNOWN_CODE, "https://parts.example.com/product/30317/").offers[0]
    assert (offer.price, offer.currency) == (253, "UAH")


def test_a_regular_price_is_the_price_and_a_sold_out_size_is_not_the_product() -> None:
    obs = observe(REGULAR_PRICE, "https://obchod.example.sk/westway")
    assert (obs.offers[0].price, obs.offers[0].special_price, obs.offers[0].currency) == (
        32, None, "EUR")
    assert obs.availability == "in_stock"


TIERED = """<html><body><h1>Acrylic bead, pkg of 6</h1>
<div class="asLowAs">As Low As <span class="asLowAsPrice">$0.24</span> per bead</div>
<table class="multiPrice"><tr><th>1 - 14</th><th>15 - 49</th></tr>
<tr><td class="price tier1">$3.46</td><td class="price tier2">$2.49</td></tr></table>
<p>- IN STOCK -</p><button>Add to Cart</button></body></html>"""


def test_an_as_low_as_unit_price_is_not_the_price() -> None:
    offer = observe(TIERED, "https://beads.example.com/itemdetails/h206447pb").offers[0]
    assert (offer.price, offer.currency) == (Decimal("3.46"), "USD")


def test_a_page_without_heading_offering_a_price_beside_its_buy_button_is_named_by_its_title(
) -> None:
    obs = observe(NO_HEADING, "https://beds.example.co.uk/deluxe")
    assert obs.name == "Deluxe Mattress | Beds Ltd"
    assert (obs.offers[0].price, obs.offers[0].currency) == (1049, "GBP")
    assert obs.attributes["source.name"] == "document title"
    # without a buy button, only a page showing that one amount as a price is one product
    bare = NO_HEADING.replace('<input type="submit" value="Add to Basket">', "")
    _, extraction = extract_page(Page(url="https://beds.example.co.uk/deluxe", text=bare,
                                      body=bare.encode()))
    assert [o.name for o in extraction.observations] == ["Deluxe Mattress | Beds Ltd"]
    two = bare.replace("</form>", '</form><div class="productPrice">From &pound;899.00</div>')
    _, extraction = extract_page(Page(url="https://beds.example.co.uk/deluxe", text=two,
                                      body=two.encode()))
    assert extraction.observations == ()


def test_extract_explain_lists_each_field_with_its_source_and_what_lost(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    page = tmp_path / "lampe.html"
    page.write_text(JSONLD, encoding="utf-8")
    assert main(["extract", str(page), "--url", "https://shop.example.de/lampe", "--explain",
                 "--json"]) == 0
    choices = {c["field"]: c for c in json.loads(capsys.readouterr().out)}
    assert list(choices) == ["name", "price", "regular_price", "currency", "availability"]
    assert choices["price"]["value"] == "49.00" and choices["price"]["source"] == "json-ld"
    assert ["49.00 ('49,00 €', score" in alt[0] for alt in choices["price"]["alternatives"]]
    assert choices["currency"]["value"] == "EUR"
    assert choices["regular_price"]["source"] == "none"
