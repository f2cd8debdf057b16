"""Kinds of product page first met on new shops: the product's own section named like a
block of other products, schema.org Product subtypes, a theme's "Regular price" label on
the price paid, a structured price range, a buy control holding several state labels.
Extracted as `crawl-ledger extract FILE` does (a file:// address)."""

from __future__ import annotations

from decimal import Decimal

from domain.values import Observation
from workers.extraction.adapters.base import Page
from workers.extraction.extract import extract_page

FILE_URL = "file:///tmp/saved-page.html"


def observations(html: str) -> tuple[Observation, ...]:
    _, extraction = extract_page(Page(url=FILE_URL, text=html, body=html.encode()))
    return extraction.observations


def paid(obs: Observation) -> tuple[Decimal | None, str | None]:
    offer = obs.offers[0]
    price = offer.special_price if offer.special_price is not None else offer.price
    return price, offer.currency


SIMILAR_NAMED_SECTION = """<html><head><title>Gucci Double G Marmont Small - Bags</title></head>
<body><div class="product-show move-similar-products-show">
<script type="application/ld+json">{"@type": "Product", "name": "Double G Marmont Small",
"offers": {"@type": "Offer", "price": 875.0, "priceCurrency": "USD",
"availability": "https://schema.org/InStock"}}</script>
<h1><span>Gucci</span><span>Double G Marmont Small</span></h1>
<div class="price">$875.00</div><button>Add to Bag</button></div>
<div class="similar-products"><h2>You may also like</h2>
<script type="application/ld+json">{"@type": "Product", "name": "Other bag",
"offers": {"@type": "Offer", "price": 99, "priceCurrency": "USD"}}</script></div>
</body></html>"""


def test_the_section_holding_the_product_heading_is_read_whatever_its_classes_say() -> None:
    found = observations(SIMILAR_NAMED_SECTION)
    assert len(found) == 1
    assert found[0].name == "Double G Marmont Small"
    assert paid(found[0]) == (Decimal("875.0"), "USD")
    assert found[0].availability == "in_stock"


def test_a_block_of_similar_products_without_the_heading_is_still_cut() -> None:
    product, similar = SIMILAR_NAMED_SECTION.split('<div class="similar-products">')
    head, section = product.split("<body>")
    page = f'{head}<body><div class="similar-products">{similar.replace("</body></html>", "")}' \
        f"{section}</body></html>"
    assert page.index("Other bag") < page.index("<h1>")
    assert [o.name for o in observations(page)] == ["Double G Marmont Small"]


def test_a_car_is_a_product() -> None:
    page = """<html><head><script type="application/ld+json">{"@context": "https://schema.org",
    "@type": "Car", "name": "Tesla Model S P100D 2018", "offers": {"@type": "Offer",
    "price": 83900, "priceCurrency": "EUR"}}</script></head>
    <body><div>Tesla Model S P100D 2018</div><p>507 visitas</p><p>83,900 €</p>
    <p>28,604 kms</p></body></html>"""
    (found,) = observations(page)
    assert paid(found) == (Decimal("83900"), "EUR")


SHOPIFY_LABELS = """<html><body><h1>Doing Things Bra</h1>
<div class="price"><span class="visually-hidden">Regular price</span>
<span class="price-item">{first}</span>{rest}</div>
<button type="submit" name="add">Add to Bag</button></body></html>"""


def test_a_regular_price_label_alone_names_the_price_paid() -> None:
    (found,) = observations(SHOPIFY_LABELS.format(first="$88", rest=""))
    assert paid(found) == (Decimal("88"), "USD")


def test_a_regular_price_label_beside_a_lower_sale_price_names_the_former_price() -> None:
    sale = ('<span class="visually-hidden">Sale price</span>'
            '<span class="price-item price-item--sale">$68</span>')
    (found,) = observations(SHOPIFY_LABELS.format(first="$88", rest=sale))
    assert paid(found) == (Decimal("68"), "USD")
    assert found.offers[0].price == Decimal("88")


RANGE = """<html><head><script type="application/ld+json">{"@type": "ProductGroup",
"name": "Doing Things Bra", "offers": {"@type": "AggregateOffer", "priceCurrency": "USD",
"lowPrice": "68.00", "highPrice": "88.00"}}</script></head>
<body><h1>Doing Things Bra</h1><div>Color: Joggy Green</div>
<div class="product-price">{shown}</div><button>Add to Bag</button></body></html>"""


def test_the_price_shown_inside_a_structured_range_is_the_one_paid() -> None:
    (found,) = observations(RANGE.replace("{shown}", "$88"))
    assert paid(found) == (Decimal("88"), "USD")


def test_a_structured_range_whose_low_price_is_shown_keeps_it() -> None:
    (found,) = observations(RANGE.replace("{shown}", "$68"))
    assert paid(found) == (Decimal("68.00"), "USD")


def test_a_price_shown_outside_the_range_does_not_replace_it() -> None:
    (found,) = observations(RANGE.replace("{shown}", "$120"))
    assert paid(found) == (Decimal("68.00"), "USD")


def test_a_buy_control_holding_several_state_labels_says_nothing_about_stock() -> None:
    page = """<html><body><h1>Zestaw podtynkowy WC</h1>
    <span class="price">997 zł</span>
    <a href="#" class="add-to-basket show"><span class="can-buy-label">do koszyka</span>
    <span class="cannot-buy-label">Sprawdź dostępność w sklepie</span>
    <span class="unavailable-label">Produkt niedostępny</span></a></body></html>"""
    (found,) = observations(page)
    assert paid(found) == (Decimal("997"), "PLN")
    assert found.availability == "in_stock"  # an enabled control, its label states unread


def test_a_buy_control_with_one_sold_out_label_still_says_out_of_stock() -> None:
    page = """<html><body><h1>Wool Scarf</h1><span class="price">£40.00</span>
    <button class="add-to-cart" disabled><span>Sold out</span></button></body></html>"""
    (found,) = observations(page)
    assert found.availability == "out_of_stock"
