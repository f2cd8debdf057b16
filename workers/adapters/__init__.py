"""The platform adapters, in the order content detection tries them.

Platform APIs come first (their JSON shapes are specific), then feeds and
locators, and the generic schema.org page reader last, since it accepts any
HTML. `for_task` picks the adapter a job starts with (the one registry the
crawler and the tests use); None means "detect it from the first page".
"""

from __future__ import annotations

from domain.values import CrawlTask
from workers.adapters.base import Adapter, Extraction, ExtractionError, Page, Request
from workers.adapters.dispensary_graphql import DispensaryAdapter
from workers.adapters.dispensary_resolver import DispensaryResolver
from workers.adapters.feeds import FeedAdapter
from workers.adapters.locator import LocatorAdapter
from workers.adapters.schema_org import SchemaOrgAdapter
from workers.adapters.shopify import ShopifyAdapter
from workers.adapters.woocommerce import WooCommerceAdapter

__all__ = [
    "ADAPTERS",
    "Adapter",
    "Extraction",
    "ExtractionError",
    "Page",
    "Request",
    "by_name",
    "detect",
    "for_task",
]

ADAPTERS: tuple[Adapter, ...] = (
    DispensaryAdapter(),
    DispensaryResolver(),
    ShopifyAdapter(),
    WooCommerceAdapter(),
    LocatorAdapter(),
    FeedAdapter(),
    SchemaOrgAdapter(),
)

#: Store platforms (as a locator names them) read by the generic adapter.
_ALIASES = {
    "feed": "feeds",
    "jsonld": "schema_org",
    "microdata": "schema_org",
    "generic": "schema_org",
    "rdfa": "schema_org",
    "opengraph": "schema_org",
}


def by_name(name: str) -> Adapter:
    """The adapter called `name` (or a platform alias); KeyError if unknown."""
    wanted = _ALIASES.get(name.lower(), name.lower())
    for adapter in ADAPTERS:
        if adapter.name == wanted:
            return adapter
    raise KeyError(f"no adapter named {name!r}; known: {', '.join(a.name for a in ADAPTERS)}")


def detect(page: Page) -> Adapter | None:
    """The first adapter that recognises the page's content, if any."""
    return next((adapter for adapter in ADAPTERS if adapter.detects(page)), None)


#: job kinds that always start with one adapter, whatever the store's platform
_BY_KIND = {"store_discovery": "locator", "feed": "feeds"}


def for_task(task: CrawlTask) -> Adapter | None:
    """The adapter a job starts with: by kind first, then by store platform; None when
    neither names one (the crawler then detects it from the first page's content)."""
    if task.kind in _BY_KIND:
        return by_name(_BY_KIND[task.kind])
    if task.kind == "entry_point" and task.platform == "dispensary":
        return by_name("dispensary-resolver")
    return by_name(task.platform) if task.platform else None
