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

Recreational and medical prices are both kept, as offers of pricing type
`rec` and `medical` (a dispensary serving both menus charges each its own
price, and a special may apply to one menu only). A variant's stock is
counted once, however many menus sell it.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from domain.values import CrawlTask, Observation, Offer
from workers.extraction.adapters import menu_common as menu
from workers.extraction.adapters.base import Extraction, Page, Request
from workers.extraction.adapters.payload import as_dicts, as_list, first_text, sniff_json, text

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
        variants = menu.variant_entries(menu.first_list(sniff_json(page), _PATHS))
        return bool(variants) and "option" in variants[0] and _priced(variants[0])

    def start(self, task: CrawlTask) -> Request:
        return Request(task.url)

    def extract(self, page: Page, task: CrawlTask) -> Extraction:
        _, products = menu.read_products(page, _PATHS, "Dutchie Plus product list")
        currency = menu.currency_for(task)
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
    variants = as_dicts(product.get("variants"))
    return menu.menu_observation(
        product_id,
        name,
        _offers(variants, currency),
        stock=_stock(variants),
        brand=first_text(menu.dig(product, "brand", "name"), product.get("brandName")),
        category=text(product.get("category")),
        image_url=first_text(product.get("image"), product.get("primaryImage")),
        sku=first_text(menu.dig(product, "posMetaData", "sku"), product.get("posId")),
        attributes=_attributes(product),
    )


def _offers(variants: list[dict[str, Any]], currency: str) -> tuple[Offer, ...]:
    """One offer per variant and menu it is priced on (recreational first)."""
    offers = []
    for variant in variants:
        count = menu.quantity(variant.get("quantity"))
        for regular, special, kind in _prices(variant):
            offers.append(
                menu.menu_offer(
                    text(variant.get("option")), regular, special, currency, count=count, pricing_type=kind
                )
            )
    return tuple(offers)


def _prices(variant: dict[str, Any]) -> list[tuple[Decimal | None, Decimal | None, str]]:
    """(regular, special, pricing type) for each menu the variant is priced on."""
    if "menuType" in variant and "price" in variant:
        medical = str(variant.get("menuType") or "").upper() == "MEDICAL"
        menus = [(variant.get("price"), variant.get("specialPrice"), "medical" if medical else "rec")]
    else:
        menus = [
            (variant.get("priceRec"), variant.get("specialPriceRec"), "rec"),
            (variant.get("priceMed"), variant.get("specialPriceMed"), "medical"),
        ]
    priced = [(menu.money(regular), menu.money(special), kind) for regular, special, kind in menus]
    return [(regular, special, kind) for regular, special, kind in priced if regular or special]


def _stock(variants: list[dict[str, Any]]) -> int | None:
    """Units in stock, each option counted once (a listing repeats an option per menu)."""
    by_option: dict[str, int] = {}
    for variant in variants:
        count = menu.quantity(variant.get("quantity"))
        if count is not None:
            option = text(variant.get("option")) or "default"
            by_option[option] = max(by_option.get(option, 0), max(count, 0))
    return sum(by_option.values()) if by_option else None


def _attributes(product: dict[str, Any]) -> dict[str, str]:
    found = {
        "strain_type": text(product.get("strainType")),
        "subcategory": first_text(product.get("subcategory"), product.get("subCategory")),
        "thc": first_text(
            menu.dig(product, "potencyThc", "formatted"), product.get("potencyThcDisplayValue")
        ),
        "cbd": first_text(
            menu.dig(product, "potencyCbd", "formatted"), product.get("potencyCbdDisplayValue")
        ),
        "effects": ", ".join(t for t in map(text, as_list(product.get("effects"))) if t),
    }
    return {key: value for key, value in found.items() if value}
