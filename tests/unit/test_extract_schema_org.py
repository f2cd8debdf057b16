"""Generic product pages: JSON-LD, microdata, RDFa, OpenGraph, visible price."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest

from domain.values import Observation
from workers.extraction.adapters.base import Page
from workers.extraction.extract import extract_page
from workers.fetching.charset import decode

PAGES = Path(__file__).parent.parent / "fixtures" / "pages"
URL = "https://northpeak.example/products/trail-runner-2"


def products(name: str, url: str = URL) -> tuple[Observation, ...]:
    text, _ = decode((PAGES / name).read_bytes())
    adapter, found = extract_page(Page(url=url, text=text))
    assert adapter.name == "schema_org"
    return found.observations


def test_main_product_sale_price_and_related_products_ignored() -> None:
    (runner,) = products("product_jsonld_sale_related.html")
    assert (runner.name, runner.sku, runner.brand) == ("Trail Runner 2", "TR2", "Northpeak")
    assert runner.provider_product_id == "TR2"
    assert runner.url == URL
    assert runner.image_url == "https://northpeak.example/img/tr2.jpg"
    nine, ten = runner.offers
    # StrikethroughPrice is the regular price; the offer's price is the sale price
    assert (nine.option, nine.price, nine.special_price, nine.currency) == (
        "US 9",
        Decimal("119.99"),
        Decimal("89.99"),
        "USD",
    )
    assert (ten.price, ten.special_price, ten.availability) == (
        Decimal("119.99"),
        None,
        "out_of_stock",
    )
    assert runner.availability == "in_stock"


def test_main_product_found_by_canonical_url_even_when_not_first() -> None:
    # the page URL has tracking junk; the canonical link names the product
    (runner,) = products("product_jsonld_sale_related.html", URL + "?utm_source=mail")
    assert runner.sku == "TR2"


def test_a_related_block_before_the_product_is_not_the_main_product() -> None:
    (jacket,) = products("product_related_first.html", "https://coats.example/field-jacket")
    assert (jacket.name, jacket.sku) == ("Field Jacket", "FJ-77")
    assert jacket.offers[0].price == Decimal("149.00") and jacket.offers[0].currency == "GBP"
    assert jacket.availability == "limited"


def test_invalid_jsonld_does_not_hide_valid_microdata() -> None:
    (kettle,) = products("product_invalid_jsonld_microdata.html", "https://cafe.example/kettle")
    assert (kettle.name, kettle.sku, kettle.brand) == ("Gooseneck Kettle", "GK-1", "Kiln & Co")
    assert (kettle.offers[0].price, kettle.offers[0].currency) == (Decimal("64.50"), "EUR")
    assert kettle.availability == "preorder"


def test_latin1_page_with_comma_decimal_price() -> None:
    (cream,) = products("product_latin1.html", "https://patisserie.example/creme")
    assert cream.name == "Crème brûlée à l'érable"
    assert (cream.offers[0].price, cream.offers[0].currency) == (Decimal("12.50"), "EUR")


def test_cp1251_page_with_rouble_price_text() -> None:
    (tea,) = products("product_cp1251.html", "https://chai.example/utro")
    assert (tea.name, tea.brand, tea.sku) == ("Чай чёрный «Утро»", "Самовар", "ЧАЙ-1")
    assert (tea.offers[0].price, tea.offers[0].currency) == (Decimal("1299.00"), "RUB")


def test_aggregate_offer_range_gives_the_low_price() -> None:
    (beans,) = products("product_aggregate_offer.html", "https://roast.example/beans")
    assert (beans.provider_product_id, beans.brand) == ("EB-250", "Roastery 9")
    assert (beans.offers[0].price, beans.offers[0].currency) == (Decimal("12.90"), "EUR")


def test_missing_price_keeps_the_product_without_offers() -> None:
    (table,) = products("product_missing_price.html", "https://wood.example/table")
    assert table.offers == () and table.availability == "backorder"
    assert table.url == "https://wood.example/table"


def test_category_page_lists_every_product() -> None:
    listed = products("category_itemlist.html", "https://tea.example/c/teas")
    assert [p.sku for p in listed] == ["T-1", "T-2", "T-3"]
    assert listed[0].url == "https://tea.example/tea/sencha"
    assert listed[1].availability == "out_of_stock"
    assert listed[2].offers == ()


def test_rdfa_product() -> None:
    (lamp,) = products("product_rdfa.html", "https://lamps.example/desk")
    assert (lamp.name, lamp.sku, lamp.offers[0].price) == ("Desk Lamp", "DL-3", Decimal("45.00"))
    assert lamp.availability == "in_stock"


def test_opengraph_fallback() -> None:
    (shirt,) = products("product_opengraph.html", "https://shirts.example/linen")
    assert (shirt.name, shirt.brand, shirt.availability) == ("Linen Shirt", "Loom", "out_of_stock")
    assert (shirt.offers[0].price, shirt.offers[0].currency) == (Decimal("59.00"), "CAD")
    assert shirt.url == "https://shirts.example/linen"
    assert shirt.image_url == "https://shirts.example/img/linen.jpg"


def test_visible_price_is_the_last_resort() -> None:
    (spoon,) = products("product_visible_price.html", "https://kitchen.example/spoon")
    assert spoon.name == "Wooden Spoon"
    assert (spoon.offers[0].price, spoon.offers[0].currency) == (Decimal("1234.56"), "PLN")


def test_a_page_without_products_yields_nothing() -> None:
    page = Page(
        url="https://blog.example/", text="<html><body><h1>Hello</h1><p>no prices</p></body></html>"
    )
    assert extract_page(page)[1].observations == ()


def test_a_dollar_sign_reads_as_the_currency_the_page_declares_elsewhere() -> None:
    """"$" on a .com page is USD unless the page says otherwise: here an Event's offer
    (not a product) declares CLP; a declaration that is no code changes nothing."""
    event = ('{"@context": "https://schema.org", "@type": "Event", "name": "Concierto", '
             '"offers": {"@type": "AggregateOffer", "lowPrice": "3340", "priceCurrency": "%s"}}')
    body = ('<html lang="es"><head><script type="application/ld+json">{}</script></head><body>'
            '<h1>Concierto</h1><p class="price">Precio: $3.340</p>'
            '<button>Comprar</button></body></html>')
    for declared, amount, code in (("CLP", "3340", "CLP"), ("XX", "3340", "USD")):
        page = Page(url="https://tickets.example.com/evento/1",
                    text=body.format(event.replace("%s", declared)))
        (ticket,) = extract_page(page)[1].observations
        assert (ticket.offers[0].price, ticket.offers[0].currency) == (Decimal(amount), code)


def test_one_product_marked_up_per_size_is_in_stock_when_any_size_is() -> None:
    """A shop writing one Product per variant (same name and page, its own sku and offer):
    the page's product has every size's offer, and is in stock when one size is."""
    def size(sku: str, stock: str) -> str:
        return ('{"@context": "https://schema.org", "@type": "Product", "name": "Boots", '
                f'"sku": "{sku}", "offers": {{"@type": "Offer", "price": "69.95", '
                f'"priceCurrency": "EUR", "availability": "https://schema.org/{stock}"}}}}')
    scripts = "".join(f'<script type="application/ld+json">{size(sku, stock)}</script>'
                      for sku, stock in (("b-35", "OutOfStock"), ("b-36", "InStock"),
                                         ("b-37", "OutOfStock")))
    page = Page(url="https://shoes.example/boots", text=f"<html><head>{scripts}</head></html>")
    (boots,) = extract_page(page)[1].observations
    assert boots.availability == "in_stock"
    assert sorted((o.option, o.availability) for o in boots.offers) == [
        ("b-35", "out_of_stock"), ("b-36", "in_stock"), ("b-37", "out_of_stock")]


def test_microdata_and_rdfa_are_parsed_only_when_they_name_a_product_type(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Breadcrumbs in RDFa or microdata (common on real shops) cannot hold a product, so
    extruct (RDFa: a whole rdflib graph) is not run on them; markup naming a Product, a
    ProductGroup or an ItemList, in any form an item's type is written, still is."""
    from workers.extraction.adapters import structured_data

    parsed: list[str] = []
    extruct = structured_data._extruct

    def recording(document: object, syntax: str, url: str) -> list[dict[str, object]]:
        parsed.append(syntax)
        return extruct(document, syntax, url)

    monkeypatch.setattr(structured_data, "_extruct", recording)
    crumbs = ('<ol vocab="https://schema.org/" typeof="BreadcrumbList"><li property="itemListElement"'
              ' typeof="ListItem"><a property="item" typeof="WebPage" href="/"><span property="name">'
              'Home</span></a></li></ol><div itemscope itemtype="https://schema.org/BreadcrumbList">'
              '<span itemprop="name">Kitchen</span></div>')
    page = Page(url="https://kitchen.example/spoon", text=(
        f'<html lang="pl"><body>{crumbs}<h1>Wooden Spoon</h1><p class="price">1 234,56 zł</p>'
        '<button>Dodaj do koszyka</button></body></html>'))
    (spoon,) = extract_page(page)[1].observations
    assert (spoon.name, spoon.offers[0].price, spoon.offers[0].currency) == (
        "Wooden Spoon", Decimal("1234.56"), "PLN")
    assert parsed == []

    for markup, syntax in (
            ('<div vocab="http://schema.org/" typeof="Product">', "rdfa"),
            ('<div prefix="s: http://schema.org/" typeof="s:Thing s:Product">', "rdfa"),
            ('<div typeof="http://schema.org/ItemList">', "rdfa"),
            ('<div itemscope itemtype="http://data-vocabulary.org/Product">', "microdata"),
            ('<div itemscope itemtype="https://schema.org/ProductGroup/">', "microdata")):
        parsed.clear()
        extract_page(Page(url="https://kitchen.example/spoon",
                          text=f"<html><body>{crumbs}{markup}<b>Spoon</b></div></body></html>"))
        assert parsed == [syntax], markup

    parsed.clear()
    assert products("product_rdfa.html", "https://lamps.example/desk")[0].sku == "DL-3"
    assert parsed == ["rdfa"]
