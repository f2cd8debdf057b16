"""Feeds that point at product pages: RSS 2.0, Atom, and a JSON social feed
`{"posts": [{"id", "text", "links", "created_at"}]}` -> normalised links.

XML feeds are untrusted: a DOCTYPE or entity declaration is refused outright
(entity-expansion bombs, external entities) rather than parsed carefully.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Iterator
from typing import Any

from domain.values import CrawlTask
from workers.extraction.adapters.base import Extraction, ExtractionError, Page, Request
from workers.extraction.adapters.payload import as_dicts, as_list, load_json, sniff_json, text
from workers.extraction.adapters.structured_data import parse_html
from workers.extraction.urls import normalize_url

__all__ = ["FeedAdapter", "links_in_text"]

_FEED_ROOT = re.compile(r"<(rss|feed|rdf:RDF)\b", re.IGNORECASE)
_UNSAFE_XML = re.compile(r"<!(DOCTYPE|ENTITY)", re.IGNORECASE)
_BARE_URL = re.compile(r"https?://[^\s<>\"'()\[\]{}]+", re.IGNORECASE)
_CONTENT_TAGS = {"description", "encoded", "content", "summary"}


class FeedAdapter:
    name = "feeds"
    version = "feeds/1"

    def detects(self, page: Page) -> bool:
        head = page.text.lstrip()[:2048]
        if head.startswith("<") and _FEED_ROOT.search(head):
            return True
        data = sniff_json(page)
        return isinstance(data, dict) and isinstance(data.get("posts"), list)

    def start(self, task: CrawlTask) -> Request:
        return Request(task.url)

    def extract(self, page: Page, task: CrawlTask) -> Extraction:
        if page.text.lstrip().startswith(("{", "[")):
            data = load_json(page)
            if not isinstance(data, dict) or not isinstance(data.get("posts"), list):
                raise ExtractionError(f"{page.url}: not a social feed payload")
            found = _post_links(as_dicts(data["posts"]))
        else:
            found = _xml_links(_parse_xml(page), page.url)
        return Extraction(links=_normalised(found, page.url))


def links_in_text(value: str) -> list[str]:
    """Bare http(s) URLs in free text, without trailing punctuation."""
    return [url.rstrip(".,;:!?") for url in _BARE_URL.findall(value)]


def _parse_xml(page: Page) -> ET.Element:
    if _UNSAFE_XML.search(page.text):
        raise ExtractionError(f"{page.url}: feed declares a DOCTYPE/entities; refused")
    try:
        return ET.fromstring(page.text)
    except (ET.ParseError, ValueError) as error:
        raise ExtractionError(f"{page.url}: not well-formed XML ({error})") from None


def _local(tag: Any) -> str:
    return tag.rsplit("}", 1)[-1].lower() if isinstance(tag, str) else ""


def _xml_links(root: ET.Element, page_url: str) -> Iterator[str]:
    if _local(root.tag) not in ("rss", "feed", "rdf"):
        raise ExtractionError(f"{page_url}: XML but not an RSS or Atom feed")
    for item in root.iter():
        if _local(item.tag) in ("item", "entry"):
            yield from _item_links(item)


def _item_links(item: ET.Element) -> Iterator[str]:
    for child in item:
        name = _local(child.tag)
        if name == "link":
            rel = child.get("rel", "alternate")
            href = child.get("href") or (child.text or "").strip()
            if href and rel in ("alternate", "related"):
                yield href
        elif name in _CONTENT_TAGS and child.text:
            yield from _html_links(child.text)


def _html_links(fragment: str) -> Iterator[str]:
    tree = parse_html(f"<div>{fragment}</div>")
    if tree is not None:
        yield from (str(href) for href in tree.xpath("//a/@href"))
        yield from links_in_text(tree.text_content())


def _post_links(posts: list[dict[str, Any]]) -> Iterator[str]:
    for post in posts:
        yield from (link for link in map(text, as_list(post.get("links"))) if link)
        yield from links_in_text(text(post.get("text")) or "")


def _normalised(links: Iterable[str], base: str) -> tuple[str, ...]:
    seen: dict[str, None] = {}
    for link in links:
        try:
            seen.setdefault(normalize_url(link, base), None)
        except ValueError:
            continue  # mailto:, javascript:, junk
    return tuple(seen)
