"""How the dashboard writes money and stock for people (Jinja2 filters).

Money is formatted by babel in the currency's own format ("$17.60", "€4.50",
"CA$12.00") from the exact decimal string the read model keeps; an amount or a
currency code babel cannot read is shown as it was recorded rather than hidden.
"""

from __future__ import annotations

from decimal import Decimal, InvalidOperation
from functools import lru_cache
from typing import Any

from babel.numbers import format_currency, is_currency

__all__ = ["money", "stock"]

#: the locale the figures are written in (the currency decides the symbol)
LOCALE = "en_US"

_STOCK_WORDS = {"in_stock": "in stock", "out_of_stock": "out of stock",
                "limited": "limited stock", "preorder": "pre-order", "unknown": "stock unknown"}


def money(value: Any, currency: str | None) -> str:
    """`17.6, "USD"` -> "$17.60"; "—" when there is no price."""
    if value is None or value == "":
        return "—"
    return _formatted(str(value), currency or "")


@lru_cache(maxsize=8192)
def _formatted(value: str, currency: str) -> str:
    """`money` of one recorded amount: prices repeat across rows and pages, and babel's
    formatting is most of a page's rendering (a product page of 50 rows: ~7 of 15 ms)."""
    try:
        amount = Decimal(value)
    except InvalidOperation:
        return f"{value} {currency}".strip()
    if not currency or not amount.is_finite() or not is_currency(currency.upper()):
        return f"{amount:f} {currency}".strip()
    return str(format_currency(amount, currency.upper(), locale=LOCALE))


def stock(availability: str | None) -> str:
    """A read model's availability ("out_of_stock") as words ("out of stock")."""
    if not availability:
        return _STOCK_WORDS["unknown"]
    return _STOCK_WORDS.get(availability, availability.replace("_", " "))
