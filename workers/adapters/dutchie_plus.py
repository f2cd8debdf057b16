"""Dutchie Plus menus and Dutchie-sourced product listings: products with `variants`.

Each product lists its purchasable options as `variants`, one per weight or
size, each naming its `option` ("3.5g", "N/A" for a single unit). Two variant
shapes are read:

* Dutchie Plus (GraphQL `menu { products }`, or the same products saved as a
  list): `priceRec`/`priceMed` with `specialPriceRec`/`specialPriceMed`
  (null when there is no special);
* listings synced from Dutchie (products keyed by `jointId`): one variant per
  option and menu, `price` and `specialPrice` as decimal strings, `menuType`
  RECREATIONAL or MEDICAL, `quantity` as a string.

Recreational prices are preferred; medical ones are used when a product has
no recreational price.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from domain.values import CrawlTask, Observation, Offer
from workers.adapters.base import Extraction, ExtractionError, Page, Request
from workers.adapters.menu_common import (
    currency_for,
    dig,
    first_list,
    menu_offer,
    money,
    quantity,
    total_quantity,
    variant_entries,
)
from workers.adapters.offers import overall_availability
from workers.adapters.payload import as_dicts, as_list, first_text, load_json, sniff_json, text

__all__ = ["DutchiePlusAdapter"]

_PATHS = (
    ("data", "menu", "products"),
    ("data", "dutchieplus", "menu", "products"),
    ("data", "products"),
    ("products",),
    ("data",),
)
_PRICE_KEYS = ("priceRec", "priceMed", "specialPriceRec", "specialPrice")


class DutchiePlusAdapter:
    name = "dutchie-plus"
    version = "dutchie-plus/1"

    def detects(self, page: Page) -> bool:
        variants = variant_entries(first_list(sniff_json(page), _PATHS))
        return bool(variants) and "option" in variants[0] and _priced(variants[0])

    def start(self, task: CrawlTask) -> Request:
        return Request(task.url)

    def extract(self, page: Page, task: CrawlTask) -> Extraction:
        products = first_list(load_json(page), _PATHS)
        if products is None:
            raise ExtractionError(f"{page.url}: not a Dutchie Plus product list")
        currency = currency_for(task)
        return Extraction(
            observations=tuple(obs for p in products if (obs := _read(p, currency)))
        )


def _priced(variant: dict[str, Any]) -> bool:
    return any(key in variant for key in _PRICE_KEYS) or (
        "price" in variant and "menuType" in variant
    )


def _read(product: dict[str, Any], currency: str) -> Observation | None:
    product_id = first_text(product.get("id"), product.get("jointId"), product.get("posId"))
    name = first_text(product.get("name"), product.get("nameText"))
    if not product_id or not name:
        return None
    offers = _offers(as_dicts(product.get("variants")), currency)
    return Observation(
        provider_product_id=product_id,
        name=name,
        offers=offers,
        availability=overall_availability(offers),
        brand=first_text(dig(product, "brand", "name"), product.get("brandName")),
        category=text(product.get("category")),
        image_url=first_text(product.get("image"), product.get("primaryImage")),
        sku=first_text(dig(product, "posMetaData", "sku"), product.get("posId")),
        quantity=total_quantity(offer.quantity for offer in offers),
        attributes=_attributes(product),
    )


def _offers(variants: list[dict[str, Any]], currency: str) -> tuple[Offer, ...]:
    menus = {str(v.get("menuType") or "").upper() for v in variants}
    if "RECREATIONAL" in menus and len(menus) > 1:
        variants = [v for v in variants if str(v.get("menuType")).upper() == "RECREATIONAL"]
    offers = []
    for variant in variants:
        regular, special, kind = _prices(variant)
        if regular is None and special is None:
            continue
        offers.append(
            menu_offer(
                text(variant.get("option")),
                regular,
                special,
                currency,
                count=quantity(variant.get("quantity")),
                pricing_type=kind,
            )
        )
    return tuple(offers)


def _prices(variant: dict[str, Any]) -> tuple[Decimal | None, Decimal | None, str]:
    """(regular, special, pricing type) of one variant, recreational first."""
    rec = money(variant.get("priceRec"))
    if rec is not None:
        return rec, money(variant.get("specialPriceRec")), "rec"
    plain = money(variant.get("price"))
    if plain is not None:
        menu = str(variant.get("menuType") or "").upper()
        return plain, money(variant.get("specialPrice")), "medical" if menu == "MEDICAL" else "rec"
    return money(variant.get("priceMed")), money(variant.get("specialPriceMed")), "medical"


def _attributes(product: dict[str, Any]) -> dict[str, str]:
    found = {
        "strain_type": text(product.get("strainType")),
        "subcategory": first_text(product.get("subcategory"), product.get("subCategory")),
        "thc": first_text(
            dig(product, "potencyThc", "formatted"), product.get("potencyThcDisplayValue")
        ),
        "cbd": first_text(
            dig(product, "potencyCbd", "formatted"), product.get("potencyCbdDisplayValue")
        ),
        "effects": ", ".join(t for t in map(text, as_list(product.get("effects"))) if t),
    }
    return {key: value for key, value in found.items() if value}
