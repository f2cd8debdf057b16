"""A product's description (searched by full-text search): read by the Shopify and
schema.org adapters as plain text, recorded on discovery and as a detail change, and
absent from events written before it existed."""

from __future__ import annotations

import json
from dataclasses import replace
from decimal import Decimal

from test_product import Catalog, app  # noqa: F401  (the fixture)

from domain.application import CrawlLedger
from domain.product import Product
from domain.values import Observation, Offer
from workers.extraction.adapters.base import Page
from workers.extraction.adapters.payload import DESCRIPTION_LIMIT, plain_text
from workers.extraction.extract import extract_page


def described(text: str | None) -> Observation:
    return Observation("a", "Blue Dream", (Offer("1g", Decimal("10"), "USD"),), "in_stock",
                       description=text)


def test_html_becomes_plain_text() -> None:
    assert plain_text("<p>Calm &amp; <b>sweet</b></p>\n<ul><li>berry</li></ul>") == \
        "Calm & sweet berry"
    assert plain_text("  <br/> ") is None and plain_text(None) is None and plain_text(7) == "7"
    assert len(plain_text("word " * 1000) or "") == DESCRIPTION_LIMIT


def test_shopify_reads_body_html() -> None:
    body = {"products": [{"id": 1, "title": "Blue Dream", "handle": "blue-dream",
                          "body_html": "<p>Sweet <em>berry</em> aroma</p>",
                          "variants": [{"id": 2, "title": "Default Title", "price": "10.00",
                                        "available": True}]}]}
    page = Page(url="https://shop.example/products.json?limit=250&page=1",
                text=json.dumps(body))
    _, found = extract_page(page)
    assert [o.description for o in found.observations] == ["Sweet berry aroma"]


def test_json_ld_description() -> None:
    node = {"@context": "https://schema.org", "@type": "Product", "name": "Blue Dream",
            "description": "A <i>calm</i> hybrid.",
            "offers": {"@type": "Offer", "price": "10.00", "priceCurrency": "USD"}}
    html = f'<html><script type="application/ld+json">{json.dumps(node)}</script></html>'
    _, found = extract_page(Page(url="https://shop.example/p/blue-dream", text=html))
    assert [o.description for o in found.observations] == ["A calm hybrid."]


def test_description_is_recorded_and_its_change_is_a_detail_change(app: CrawlLedger) -> None:  # noqa: F811
    shop = Catalog(app)
    shop.crawl(described("Sweet."))
    assert app.get_product(shop.product_id("a")).description == "Sweet."
    shop.crawl(described("Sweet and calm."))
    shop.crawl(described(None))  # a crawl that reads none keeps the one known
    changes = [e.fields for e in shop.events("a") if type(e).__name__ == "DetailsChanged"]
    assert changes == [{"description": "Sweet and calm."}]
    assert app.get_product(shop.product_id("a")).description == "Sweet and calm."


def test_a_discovery_recorded_before_descriptions_replays(app: CrawlLedger) -> None:  # noqa: F811
    shop = Catalog(app)
    shop.crawl(described("Sweet."))
    stored = app.mapper.to_stored_event(shop.events("a")[0])
    state = json.loads(stored.state)
    assert state.pop("description") == "Sweet."
    older = replace(stored, state=json.dumps(state).encode())  # as recorded before
    replayed = app.mapper.to_domain_event(older).mutate(None)
    assert isinstance(replayed, Product) and replayed.description is None
    assert replayed.name == "Blue Dream"


def test_observation_payloads_without_a_description_are_unchanged() -> None:
    assert "description" not in described(None).to_payload()
    assert Observation.from_payload(described("Sweet.").to_payload()) == described("Sweet.")
