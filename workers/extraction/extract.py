"""One entry point for extraction: pick the adapter, run it, contain its bugs.

`extract_page` raises only `ExtractionError` (the job's `parse_error`): an
adapter that trips over an unexpected payload shape must fail this crawl with
a clear message, never crash the worker loop.
"""

from __future__ import annotations

from collections.abc import Iterable
from decimal import Decimal
from typing import Any

from domain.values import CrawlTask, Observation, Offer
from workers.extraction.adapters import by_name, detect
from workers.extraction.adapters.base import Adapter, Extraction, ExtractionError, Page
from workers.extraction.adapters.generic_menu import CrossCheck, cross_check, read_menu
from workers.extraction.adapters.json_walk import load

__all__ = ["default_task", "extract_page", "menu_cross_check", "products_to_json"]


def default_task(url: str, kind: str = "product_page") -> CrawlTask:
    """A stand-in task for extracting a saved page outside a crawl."""
    return CrawlTask(job_id="local", lease_id="local", attempt=1, kind=kind, url=url)


def extract_page(
    page: Page, task: CrawlTask | None = None, adapter_name: str | None = None
) -> tuple[Adapter, Extraction]:
    """(the adapter used, what it found); ExtractionError is the only failure."""
    adapter = _choose(page, adapter_name)
    try:
        return adapter, adapter.extract(page, task or default_task(page.url))
    except ExtractionError:
        raise
    except Exception as error:
        kind = type(error).__name__
        raise ExtractionError(
            f"{adapter.name} could not read {page.url}: {kind}: {error}"
        ) from error


def menu_cross_check(page: Page, extraction: Extraction) -> CrossCheck | None:
    """The generic menu reader's reading of a JSON payload beside an adapter's (None when
    the page is not JSON): where a platform changed its payload, they part."""
    data = load(page.text)
    if data is None:
        return None
    return cross_check(extraction.observations, read_menu(data))


def _choose(page: Page, adapter_name: str | None) -> Adapter:
    if adapter_name:
        try:
            return by_name(adapter_name)
        except KeyError as error:
            raise ExtractionError(str(error.args[0])) from None
    try:
        adapter = detect(page)
    except Exception as error:
        raise ExtractionError(f"could not inspect {page.url}: {error}") from error
    if adapter is None:
        raise ExtractionError(f"no adapter recognises {page.url}")
    return adapter


def products_to_json(observations: Iterable[Observation]) -> list[dict[str, Any]]:
    """The public JSON shape of extracted products (prices as decimal strings)."""
    return [
        {
            "name": obs.name,
            "brand": obs.brand,
            "sku": obs.sku,
            "url": obs.url,
            "availability": obs.availability,
            "offers": [_offer_json(offer) for offer in obs.offers],
        }
        for obs in observations
    ]


def _offer_json(offer: Offer) -> dict[str, Any]:
    return {
        "option": offer.option,
        "price": _money(offer.price),
        "special_price": _money(offer.special_price),
        "currency": offer.currency,
        "availability": offer.availability,
        "quantity": offer.quantity,
    }


def _money(value: Decimal | None) -> str | None:
    return None if value is None else format(value, "f")
