"""The platform adapters, in the order content detection tries them.

Platform APIs come first (their JSON shapes are specific; the dispensary
menu platforms are told apart by the keys of their product and variant records), then feeds and
locators, and the generic schema.org page reader last, since it accepts any
HTML. `FALLBACKS` are tried only when none of them recognises a page: the generic
menu reader, for JSON menus of platforms without an adapter. `REGISTRY` (a
`Registry`: `by_name`, `detect`, `for_task`) is the one registry the crawler uses;
tests build a `Registry` of their own adapters.
"""

from __future__ import annotations

from workers.extraction.adapters.base import Adapter, Extraction, ExtractionError, Page, Request
from workers.extraction.adapters.dispensary_graphql import DispensaryAdapter
from workers.extraction.adapters.dispensary_resolver import DispensaryResolver
from workers.extraction.adapters.dispense import DispenseAdapter
from workers.extraction.adapters.dutchie_plus import DutchiePlusAdapter
from workers.extraction.adapters.feeds import FeedAdapter
from workers.extraction.adapters.generic_menu import GenericMenuAdapter
from workers.extraction.adapters.jane import JaneAdapter
from workers.extraction.adapters.locator import LocatorAdapter
from workers.extraction.adapters.registry import Registry
from workers.extraction.adapters.schema_org import SchemaOrgAdapter
from workers.extraction.adapters.shopify import ShopifyAdapter
from workers.extraction.adapters.sweed import SweedAdapter
from workers.extraction.adapters.weedmaps import WeedmapsAdapter
from workers.extraction.adapters.woocommerce import WooCommerceAdapter

__all__ = [
    "ADAPTERS",
    "FALLBACKS",
    "REGISTRY",
    "Adapter",
    "Extraction",
    "ExtractionError",
    "Page",
    "Registry",
    "Request",
    "by_name",
    "detect",
    "for_task",
]

ADAPTERS: tuple[Adapter, ...] = (
    DispensaryAdapter(),
    DispensaryResolver(),
    DutchiePlusAdapter(),
    SweedAdapter(),
    DispenseAdapter(),
    JaneAdapter(),
    WeedmapsAdapter(),
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
    "dutchie_plus": "dutchie-plus",
    "dispenseapp": "dispense",
    "iheartjane": "jane",
    "rdfa": "schema_org",
    "opengraph": "schema_org",
}


#: Generic readers, tried when no adapter above recognises a page.
FALLBACKS: tuple[Adapter, ...] = (GenericMenuAdapter(),)

REGISTRY = Registry(ADAPTERS, _ALIASES, FALLBACKS)
by_name = REGISTRY.by_name
detect = REGISTRY.detect
for_task = REGISTRY.for_task
