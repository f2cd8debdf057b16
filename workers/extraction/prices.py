"""Price text -> `Money` (Decimal amount + ISO 4217 code), via price-parser.

Money is never a float: numbers arriving from JSON should already be
`Decimal` (the adapters parse JSON with `parse_float=Decimal`); a stray float
is converted through `str` so its shortest repr, not its binary value, is kept.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation

from price_parser import Price

from workers.extraction.currency import Where, minor_units, resolve

__all__ = ["Money", "currency_code", "parse_amount", "parse_price", "to_minor_unit"]

_ISO = re.compile(r"^[A-Z]{3}$")
_PLAIN_NUMBER = re.compile(r"^\s*-?\d+(\.\d+)?\s*$")
_DIGIT = re.compile(r"\d")
#: "1e999", "2.5E+3", "0x10", "0b101": forms no shop writes a price in, which price-parser
#: would read as their first digits (1, 0): such text is no price at all
_NOT_DECIMAL = re.compile(r"(?<![^\W_])(?:\d+(?:[.,]\d+)?[eE][+-]?\d|0[xXbBoO][0-9a-fA-F])")
#: the word for "price" in the languages of the shops crawled (a label "Price:", a
#: Twitter card's "Price" datum), as a regex alternation
PRICE_WORDS = (r"price|preis|prix|precio|prezzo|prijs|pris|pre[cç]o|cena|cijena|hinta|fiyat|"
               r"цена|ціна|kaina|價格|价格|価格|가격")
#: "$400 5 bids", "12,00 € 3 Stück": a count of something after the amount (a space
#: groups thousands only before exactly three digits)
_COUNT_AFTER = re.compile(r"(?<=\d)\s+\d{1,2}\s+[^\W\d_]{2,}.*$", re.DOTALL)
#: one kind of separator, each followed by exactly three digits: "24.990", "1,234"
_TOKEN = re.compile(r"[^\d\s,\-–—()/:;+*%]*[^\d\s.,\-–—()/:;+*%][^\d\s,\-–—()/:;+*%]*")
_GROUPED = re.compile(r"\d{1,3}(?:([.,])\d{3})+(?!\d)")
#: a number written with both separators ("1.234,56", "1,299.00"): the last one is decimal
_BOTH_SEPARATORS = re.compile(r"\d[\d.,]*[.,]\d+")
#: a structured number that is one group of thousands ("1.234"): grouping, not three
#: decimals, where the page's locale writes decimals with a comma
_ONE_GROUP = re.compile(r"^\s*[1-9]\d{0,2}\.\d{3}\s*$")


@dataclass(frozen=True)
class Money:
    amount: Decimal
    currency: str | None


def currency_code(symbol: str | None, hint: str | None = None,
                  where: Where | None = None) -> str | None:
    """ISO 4217 code for a symbol/code as found on a page (`workers.extraction.currency.resolve`);
    `hint` is the store's currency, `where` the page's locale."""
    place = where or Where()
    if hint and place.hint is None:
        place = replace(place, hint=resolve(hint.strip().upper()))
    if not symbol:
        return place.hint
    return resolve(symbol, place) or place.hint


def parse_amount(value: object, *, structured: bool = False) -> Decimal | None:
    """Just the amount; `structured` values (schema.org, APIs) use '.' decimals."""
    money = parse_price(value, structured=structured)
    return money.amount if money else None


def parse_price(
    value: object, currency_hint: str | None = None, *, structured: bool = False,
    where: Where | None = None,
) -> Money | None:
    """Parse "12,50 €", "$1,234.56", "$10 – $20" (the low end); "Free"/junk -> None.

    `where` (the page's locale) decides what "24.990" or "1,234" means: a thousands
    separator for a currency without minor units or where the locale says so."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, (int, float, Decimal)):
        return _from_number(value, currency_hint, where)
    text = str(value).strip()
    if not text or len(text) > 200 or not _DIGIT.search(text):
        return None  # "Free", "Call for price": no number, so no price
    if _NOT_DECIMAL.search(text):
        return None
    if structured and _PLAIN_NUMBER.match(text):
        if _ONE_GROUP.match(text) and where is not None and where.decimal_separator == ",":
            text = text.replace(".", "")
        return _from_number(Decimal(text), currency_hint, where)
    text = _COUNT_AFTER.sub("", text)
    parsed = Price.fromstring(text, currency_hint=currency_hint)
    shown = parsed.currency
    if shown and shown.isalpha() and not re.search(
            rf"(?<![^\W\d_]){re.escape(shown)}(?![^\W\d_])", text):
        shown = None  # part of a word: "AUDI 100" holds no AUD
    shown = shown or _currency_token(text, where)
    currency = currency_code(shown, currency_hint, where)
    separator = _decimal_separator(text, currency, where)
    if separator is not None:
        parsed = Price.fromstring(text, currency_hint=currency_hint,
                                  decimal_separator=separator)
    if parsed.amount is None or not _finite(parsed.amount):
        return None
    return Money(to_minor_unit(parsed.amount, currency), currency)


def to_minor_unit(amount: Decimal, currency: str | None) -> Decimal:
    """`amount` rounded half-up to the currency's minor unit when it has more decimals
    ("19.995" EUR -> 20.00, "1234.5" JPY -> 1235); unchanged when the currency is unknown
    or the amount has no more decimals than the currency uses."""
    if currency is None:
        return amount
    places = minor_units(currency)
    exponent = amount.as_tuple().exponent
    if not isinstance(exponent, int) or exponent >= -places:
        return amount
    return amount.quantize(Decimal(1).scaleb(-places), rounding=ROUND_HALF_UP)


def _currency_token(text: str, where: Where | None) -> str | None:
    """A currency price-parser does not know ("270,00 Kn", "502 б.р."): the first token
    `workers.extraction.currency.resolve` reads as one; other words are never taken for one."""
    for token in _TOKEN.findall(text):
        if resolve(token, where or Where()):
            return str(token)
    return None


def _decimal_separator(text: str, currency: str | None, where: Where | None) -> str | None:
    """The decimal separator of an ambiguous number ("24.990"), or None to let
    price-parser decide."""
    both = _BOTH_SEPARATORS.search(text)
    if both is not None and "." in both.group(0) and "," in both.group(0):
        number = both.group(0)
        return "." if number.rfind(".") > number.rfind(",") else ","
    grouped = _GROUPED.search(text)
    if grouped is None:
        return None
    separator = grouped.group(1)
    other = "," if separator == "." else "."
    if currency is not None and minor_units(currency) == 0:
        return other  # no minor units: the separator groups thousands
    local = where.decimal_separator if where is not None else None
    if local in (".", ","):
        return local
    return None


def _from_number(value: float | Decimal, hint: str | None,
                 where: Where | None = None) -> Money | None:
    try:
        amount = value if isinstance(value, Decimal) else Decimal(str(value))
    except InvalidOperation:
        return None
    if not _finite(amount) or amount < 0:
        return None
    currency = currency_code(None, hint, where)
    return Money(to_minor_unit(amount, currency), currency)


def _finite(amount: Decimal) -> bool:
    return amount.is_finite() and abs(amount) < Decimal("1e12")


def written_forms(amount: Decimal) -> frozenset[str]:
    """How pages write `amount`: "18.00", "18,00", "1,299.00", "1.299,00"."""
    plain = f"{amount:.2f}"
    whole, cents = plain.split(".")
    grouped = f"{int(whole):,}"
    return frozenset({plain, f"{whole},{cents}", f"{grouped}.{cents}",
                      f"{grouped.replace(',', '.')},{cents}"})
