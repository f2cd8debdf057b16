"""Feeds (RSS, Atom, social JSON) -> normalised links; store locators -> stores."""

from __future__ import annotations

from pathlib import Path

import pytest

from domain.values import DiscoveredStore
from workers.extraction.adapters.base import Extraction, ExtractionError, Page
from workers.extraction.extract import extract_page

PAGES = Path(__file__).parent.parent / "fixtures" / "pages"


def extract(name: str, url: str, adapter: str | None = None) -> tuple[str, Extraction]:
    page = Page(url=url, text=(PAGES / name).read_text("utf-8"))
    used, found = extract_page(page, adapter_name=adapter)
    return used.name, found


def test_rss_links_from_item_links_and_description_html_normalised_and_deduplicated() -> None:
    name, found = extract("feed_rss.xml", "https://northpeak.example/feed.xml")
    assert name == "feeds"
    assert found.links == (
        "https://northpeak.example/products/trail-runner-2",
        "https://northpeak.example/products/wool-socks",
        "https://northpeak.example/products/rain-shell",
    )


def test_atom_alternate_links_and_summary_html() -> None:
    _, found = extract("feed_atom.xml", "https://cafe.example/atom")
    assert found.links == (
        "https://cafe.example/product/ceramic-pour-over/",
        "https://cafe.example/product/matcha-tin/",
    )


def test_social_feed_links_and_urls_in_text() -> None:
    _, found = extract("feed_social.json", "https://social.example/api/posts")
    assert found.links == (
        "https://shop.example/p/hoodie?size=M",
        "https://other.example/x",
    )


def test_feed_with_doctype_or_entities_is_refused() -> None:
    with pytest.raises(ExtractionError, match="DOCTYPE"):
        extract("feed_doctype.xml", "https://x.example/feed")


def test_broken_xml_is_a_parse_error() -> None:
    page = Page(url="https://x.example/feed", text="<rss><channel><item><link>https://a.example/")
    with pytest.raises(ExtractionError, match="well-formed"):
        extract_page(page)


def test_store_locator() -> None:
    name, found = extract("locator.json", "https://locator.example/stores.json")
    assert name == "locator"
    assert found.stores == (
        DiscoveredStore(
            name="Green Leaf Denver",
            base_url="http://menus.example",
            platform="dispensary",
            entry_url="http://menus.example/embedded-menu/green-leaf-denver",
            region="CO",
            timezone="America/Denver",
        ),
        DiscoveredStore(
            name="Northpeak",
            base_url="https://northpeak.example",
            platform="shopify",
            entry_url="https://northpeak.example/products.json",
            region="WA",
            timezone="America/Los_Angeles",
        ),
    )
