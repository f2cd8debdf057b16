"""Entry points of dispensary menus: a menu page URL -> the platform's store id.

`http://host/embedded-menu/<slug>` (or `/dispensary/<slug>`) is resolved by
asking the same GraphQL API for the dispensary whose cName is `<slug>`; the
catalog is then crawled at `<origin>/graphql`.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import unquote, urlsplit

from domain.values import CrawlTask
from workers.extraction.adapters.base import Extraction, ExtractionError, Page, Request
from workers.extraction.adapters.dispensary_query import dispensaries_body
from workers.extraction.adapters.payload import as_dicts, load_json, sniff_json, text

__all__ = ["DispensaryResolver", "graphql_url", "menu_slug"]

_MENU_PREFIXES = ("embedded-menu", "dispensary", "dispensaries", "stores")


def graphql_url(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}/graphql"


def menu_slug(url: str) -> str:
    """`<slug>` of a menu page URL; ValueError when the URL is not one."""
    segments = [unquote(s) for s in urlsplit(url).path.split("/") if s]
    for index, segment in enumerate(segments[:-1]):
        if segment.lower() in _MENU_PREFIXES:
            return segments[index + 1]
    raise ValueError(f"not a dispensary menu URL: {url}")


class DispensaryResolver:
    name = "dispensary-resolver"
    version = "dispensary-resolver/1"

    def detects(self, page: Page) -> bool:
        data = sniff_json(page)
        return isinstance(_dispensaries(data), list)

    def start(self, task: CrawlTask) -> Request:
        try:
            slug = menu_slug(task.url)
        except ValueError as error:
            raise ExtractionError(str(error)) from None
        return Request(graphql_url(task.url), method="POST", json=dispensaries_body(slug))

    def extract(self, page: Page, task: CrawlTask) -> Extraction:
        found = _dispensaries(load_json(page))
        if not isinstance(found, list):
            raise ExtractionError(f"{page.url}: not a ConsumerDispensaries response")
        wanted = _wanted_slug(task.url)
        candidates = as_dicts(found)
        match = next((d for d in candidates if wanted and d.get("cName") == wanted), None)
        match = match or (candidates[0] if candidates else None)
        store_id = text(match.get("id")) if match else None
        if not store_id:
            raise ExtractionError(f"{page.url}: no dispensary found for {wanted or task.url!r}")
        return Extraction(platform_store_id=store_id, catalog_url=graphql_url(task.url or page.url))


def _dispensaries(data: Any) -> Any:
    if isinstance(data, dict) and isinstance(data.get("data"), dict):
        return data["data"].get("filteredDispensaries")
    return None


def _wanted_slug(url: str) -> str | None:
    try:
        return menu_slug(url)
    except ValueError:
        return None
