"""Visible prices on pages shaped in ways no shop's rule foresees: a wrapper or an unclosed
tag holding the whole page, a stray second `<html>`, no heading, list-price and savings
labels, a bundle offered beside the product."""

from __future__ import annotations

from decimal import Decimal

from workers.extraction.adapters.base import Page
from workers.extraction.extract import extract_page

URL = "file:///tmp/page.html"  # as `crawl-ledger extract FILE` reads a saved page


def products(html: str):  # type: ignore[no-untyped-def]
    _, extraction = extract_page(Page(url=URL, text=html, body=html.encode()))
    return extraction.observations


def paid(html: str) -> tuple[Decimal | None, str | None, str]:
    (obs,) = products(html)
    offer = obs.offers[0]
    price = offer.special_price if offer.special_price is not None else offer.price
    return price, offer.currency, obs.availability


PRODUCT = """<h1>French Vanilla Ground Coffee</h1>
<dl><dt>Price</dt><dd><span>$8.99</span></dd></dl><p>In Stock</p>
<button class="add-to-cart">Add to cart</button>"""
FILLER = "".join(f"<p>line {i}</p>" for i in range(30))


def test_a_noise_named_wrapper_holding_most_of_the_page_is_read() -> None:
    # a sticky footer's wrapper ("footerPush") around the whole product
    html = f"<html><body><div class='footerPush'>{PRODUCT}{FILLER}</div><footer>x</footer></body></html>"
    assert paid(html) == (Decimal("8.99"), "USD", "in_stock")
    # a small element so named still is noise: its price is not the product's
    small = (f"<html><body>{PRODUCT}{FILLER}<div class='footer-links'>"
             "<span class='price'>$1.00</span></div></body></html>")
    assert paid(small)[0] == Decimal("8.99")


def test_a_nav_left_open_before_the_product_does_not_hide_it() -> None:
    html = f"<html><body><nav class='navbar'><ul><li><a href='/a'>Gifts</a></li></ul>{PRODUCT}{FILLER}</body></html>"
    assert paid(html) == (Decimal("8.99"), "USD", "in_stock")


def test_a_stray_second_html_document_is_read() -> None:
    html = (f"<html><head><title>Coffee</title></head><body><nav class='navbar'>menu</nav>"
            f"</body></html><html><body>{PRODUCT}{FILLER}</body></html>")
    assert paid(html) == (Decimal("8.99"), "USD", "in_stock")


def test_a_page_without_heading_is_named_by_its_title_when_one_price_is_offered() -> None:
    html = ("<html><head><title>Custom seat cover - Shop</title></head><body><table><tr><td>"
            "<font>Custom-Made! $180.00</font></td></tr></table></body></html>")
    (obs,) = products(html)
    assert (obs.name, obs.offers[0].price) == ("Custom seat cover - Shop", Decimal("180.00"))
    # two prices and no buy control: nothing says which one is the product's
    listing = html.replace("</table>", "<tr><td><font>Deluxe $220.00</font></td></tr></table>")
    assert products(listing) == ()


def test_retail_price_is_a_list_price_and_savings_no_price() -> None:
    html = f"""<html><head><title>Eau Duelle | PerfumeMart</title></head><body>
<table><tr><td class="price-info"><div class="price">Retail Price: $125.00</div>
<div class="price">Your Savings: $11.05</div><div class="price">Your Price: $113.95</div>
</td></tr></table><p>In Stock</p><input type="submit" value="Add to Cart">{FILLER}</body></html>"""
    (obs,) = products(html)
    offer = obs.offers[0]
    assert (offer.price, offer.special_price, obs.name) == (
        Decimal("125.00"), Decimal("113.95"), "Eau Duelle | PerfumeMart")


def test_a_bundle_offered_beside_the_product_is_not_its_price() -> None:
    html = f"""<html><body><h1>French Vanilla Ground Coffee</h1>
<div id="buyTogetherModule"><div class="buyTogetherCheckout">Price for both:
<span class="addToCartSpecialPrice">$17.98</span></div></div>{FILLER}
<span>$8.99</span><button class="add-to-cart">Add to cart</button></body></html>"""
    assert paid(html)[0] == Decimal("8.99")


def test_a_primary_price_is_no_old_price_and_shipping_abbreviations_no_price() -> None:
    html = f"""<html><body><h1>Star Wars Express Train Collection</h1>
<div class="price"><dl class="primary"><dt>Price:</dt><dd>$79.99 US</dd></dl>
<dl class="secondary"><dt>s&amp;s</dt><dd>$9.99 US</dd></dl></div>
<a class="add-to-cart" href="/cart">Add to cart</a>{FILLER}</body></html>"""
    offer = products(html)[0].offers[0]
    assert (offer.price, offer.special_price) == (Decimal("79.99"), None)


def test_a_quantity_tier_price_followed_by_each_is_a_unit_price() -> None:
    html = f"""<html><body><h1>Know Your Bible</h1>
<div class="product-sale"><em>$0.99</em></div>
<div class="product-message">Buy 10 or more for <b class="price">$0.79</b> each.</div>
<button class="add-to-cart">Add to cart</button>{FILLER}</body></html>"""
    offer = products(html)[0].offers[0]
    assert (offer.price, offer.special_price) == (Decimal("0.99"), None)


CARD = """<li><div class="card"><em class="product-price">${amount}</em></div></li>"""


def test_prices_set_alike_in_cards_lose_to_the_product_own_price() -> None:
    cards = "".join(CARD.format(amount=a) for a in ("5.95", "14.99", "39.99"))
    html = f"""<html><body><h1>Know Your Bible</h1>
<div class="product-sale"><em>$0.99</em> (our price)</div>
<button class="add-to-cart">Add to cart</button>{FILLER * 4}
<h2>Customers also liked</h2><ul>{cards}</ul></body></html>"""
    assert paid(html)[0] == Decimal("0.99")
    # one card alone is no listing: its marks still make it the price
    single = html.replace(cards, CARD.format(amount="5.95"))
    assert paid(single)[0] == Decimal("5.95")
