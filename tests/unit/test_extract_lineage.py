"""Field-by-field extraction records where each value came from (`source.<field>` on
the observation, hence on every Observed event), and `extract --explain` shows the
chosen value, its source and the alternatives that lost."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ledger.cli import main
from workers.adapters.base import Page
from workers.extraction import extract_page

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
