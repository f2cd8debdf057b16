"""Store locators: `{"stores": [{name, url, platform, entry_url, region, timezone}]}`
-> the stores to register (store discovery jobs)."""

from __future__ import annotations

from typing import Any

from domain.values import CrawlTask, DiscoveredStore
from workers.extraction.adapters.base import Extraction, ExtractionError, Page, Request
from workers.extraction.adapters.payload import as_dicts, first_text, load_json, sniff_json, text
from workers.extraction.urls import is_http_url

__all__ = ["LocatorAdapter"]


class LocatorAdapter:
    name = "locator"
    version = "locator/1"

    def detects(self, page: Page) -> bool:
        data = sniff_json(page)
        if not isinstance(data, dict) or not isinstance(data.get("stores"), list):
            return False
        stores = as_dicts(data["stores"])
        return not stores or "platform" in stores[0] or "entry_url" in stores[0]

    def start(self, task: CrawlTask) -> Request:
        return Request(task.url)

    def extract(self, page: Page, task: CrawlTask) -> Extraction:
        data = load_json(page)
        if not isinstance(data, dict) or not isinstance(data.get("stores"), list):
            raise ExtractionError(f"{page.url}: not a store locator payload")
        stores = (_store(item) for item in as_dicts(data["stores"]))
        return Extraction(stores=tuple(store for store in stores if store))


def _store(item: dict[str, Any]) -> DiscoveredStore | None:
    name, base_url = text(item.get("name")), text(item.get("url"))
    entry_url = first_text(item.get("entry_url"), base_url)
    if not name or not base_url or not entry_url:
        return None
    if not is_http_url(base_url) or not is_http_url(entry_url):
        return None
    return DiscoveredStore(
        name=name,
        base_url=base_url,
        platform=(text(item.get("platform")) or "jsonld").lower(),
        entry_url=entry_url,
        region=text(item.get("region")),
        timezone=text(item.get("timezone")),
    )
