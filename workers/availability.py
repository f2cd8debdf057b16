"""schema.org availability values and platform flags -> the ledger vocabulary.

The result is always one of `domain.values.AVAILABILITIES`; anything we do
not recognise is "unknown" rather than a guess.
"""

from __future__ import annotations

import re

from domain.values import AVAILABILITIES

__all__ = ["from_flag", "to_availability"]

_MAP: dict[str, str] = {
    "instock": "in_stock",
    "onlineonly": "in_stock",
    "instoreonly": "in_stock",
    "available": "in_stock",
    "outofstock": "out_of_stock",
    "soldout": "out_of_stock",
    "oos": "out_of_stock",
    "unavailable": "out_of_stock",
    "preorder": "preorder",
    "presale": "preorder",
    "backorder": "backorder",
    "availablefororder": "backorder",  # OpenGraph's word for "orderable, not on hand"
    "discontinued": "discontinued",
    "limitedavailability": "limited",
    "limited": "limited",
}
_NOT_ALNUM = re.compile(r"[^a-z]")


def to_availability(value: object) -> str:
    """Map "https://schema.org/InStock", "InStock", "in stock", True… to the vocabulary."""
    if isinstance(value, bool):
        return from_flag(value)
    if isinstance(value, (list, tuple)):
        return next((a for a in map(to_availability, value) if a != "unknown"), "unknown")
    if not isinstance(value, str):
        return "unknown"
    text = value.strip().lower()
    if text in AVAILABILITIES:
        return text
    # The last path segment covers http(s)://schema.org/X and schema:X alike.
    tail = text.rstrip("/").rsplit("/", 1)[-1].rsplit(":", 1)[-1]
    return _MAP.get(_NOT_ALNUM.sub("", tail), "unknown")


def from_flag(in_stock: bool | None) -> str:
    """A platform's boolean stock flag; None means the platform did not say."""
    if in_stock is None:
        return "unknown"
    return "in_stock" if in_stock else "out_of_stock"
