"""Price text -> `Money` (Decimal amount + ISO 4217 code), via price-parser.

Money is never a float: numbers arriving from JSON should already be
`Decimal` (the adapters parse JSON with `parse_float=Decimal`); a stray float
is converted through `str` so its shortest repr, not its binary value, is kept.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation

from price_parser import Price

__all__ = ["Money", "currency_code", "parse_amount", "parse_price"]

#: Symbols and local words price-parser returns -> ISO 4217. "$" and "kr" are
#: ambiguous, so they yield to a store's currency hint (see `currency_code`).
_SYMBOLS: dict[str, str] = {
    "€": "EUR",
    "eur": "EUR",
    "euro": "EUR",
    "£": "GBP",
    "$": "USD",
    "us$": "USD",
    "zł": "PLN",
    "zl": "PLN",
    "pln": "PLN",
    "руб": "RUB",
    "руб.": "RUB",
    "р.": "RUB",
    "₽": "RUB",
    "rub": "RUB",
    "r$": "BRL",
    "¥": "JPY",
    "円": "JPY",
    "₹": "INR",
    "rs.": "INR",
    "c$": "CAD",
    "ca$": "CAD",
    "a$": "AUD",
    "au$": "AUD",
    "nz$": "NZD",
    "hk$": "HKD",
    "₩": "KRW",
    "₺": "TRY",
    "tl": "TRY",
    "kč": "CZK",
    "₴": "UAH",
    "грн": "UAH",
    "ft": "HUF",
    "lei": "RON",
    "chf": "CHF",
    "fr.": "CHF",
    "kr": "SEK",
    "kr.": "DKK",
    "r": "ZAR",
    "₪": "ILS",
    "฿": "THB",
    "₫": "VND",
    "₱": "PHP",
}
_KRONA = {"SEK", "NOK", "DKK", "ISK"}
_AMBIGUOUS = {
    "$": {"USD", "CAD", "AUD", "NZD", "HKD", "SGD", "MXN"},
    "kr": _KRONA,
    "kr.": _KRONA,
    "¥": {"JPY", "CNY"},
}
_ISO = re.compile(r"^[A-Z]{3}$")
_PLAIN_NUMBER = re.compile(r"^\s*-?\d+(\.\d+)?\s*$")
_DIGIT = re.compile(r"\d")


@dataclass(frozen=True)
class Money:
    amount: Decimal
    currency: str | None


def currency_code(symbol: str | None, hint: str | None = None) -> str | None:
    """ISO 4217 code for a symbol/code as found on a page; `hint` is the store's."""
    hint_code = hint.strip().upper() if hint and _ISO.match(hint.strip().upper()) else None
    if not symbol:
        return hint_code
    key = symbol.strip().lower()
    if key in _AMBIGUOUS and hint_code in _AMBIGUOUS[key]:
        return hint_code
    if key in _SYMBOLS:
        return _SYMBOLS[key]
    return key.upper() if _ISO.match(key.upper()) else hint_code


def parse_amount(value: object, *, structured: bool = False) -> Decimal | None:
    """Just the amount; `structured` values (schema.org, APIs) use '.' decimals."""
    money = parse_price(value, structured=structured)
    return money.amount if money else None


def parse_price(
    value: object, currency_hint: str | None = None, *, structured: bool = False
) -> Money | None:
    """Parse "12,50 €", "$1,234.56", "$10 – $20" (the low end); "Free"/junk -> None."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, (int, float, Decimal)):
        return _from_number(value, currency_hint)
    text = str(value).strip()
    if not text or len(text) > 200 or not _DIGIT.search(text):
        return None  # "Free", "Call for price": no number, so no price
    if structured and _PLAIN_NUMBER.match(text):
        return _from_number(Decimal(text), currency_hint)
    parsed = Price.fromstring(text, currency_hint=currency_hint)
    if parsed.amount is None or not _finite(parsed.amount):
        return None
    return Money(parsed.amount, currency_code(parsed.currency, currency_hint))


def _from_number(value: float | Decimal, hint: str | None) -> Money | None:
    try:
        amount = value if isinstance(value, Decimal) else Decimal(str(value))
    except InvalidOperation:
        return None
    if not _finite(amount) or amount < 0:
        return None
    return Money(amount, currency_code(None, hint))


def _finite(amount: Decimal) -> bool:
    return amount.is_finite() and abs(amount) < Decimal("1e12")
