"""What a field of an unknown menu API means, judged by the words of its key.

Menu APIs name the same things differently (`price`, `priceRec`, `price_sell`,
`unitPrice`; `specialPrice`, `promoPrice`, `discounted_price_gram`; `quantity`,
`availableQty`, `inStock`), so a key is split into lower-case words
(`recSpecialPrices` -> rec, special, prices; `price_eighth_ounce` -> price, eighth,
ounce) and classified by the words it holds. Values are read leniently: numbers,
numeric strings, `{"amount": …}` money objects; zero, negative, non-finite and
absurd amounts are "no price".
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation
from functools import lru_cache
from itertools import islice
from typing import Any

from workers.extraction.prices import parse_amount

__all__ = [
    "MAX_PRICE",
    "amount",
    "is_cents_key",
    "is_label_list_key",
    "is_medical",
    "is_money_in_cents",
    "is_name_key",
    "is_option_list_key",
    "is_plain_price_key",
    "is_price_key",
    "is_product_list_key",
    "is_sale_key",
    "is_struck_key",
    "label_of",
    "size_label",
    "slot_weight",
    "stock_of",
    "words",
]

#: a price above this is not a price a menu shows (ids, timestamps, hostile input)
MAX_PRICE = Decimal(1_000_000)
#: distinct keys whose reading is remembered (menus repeat a few dozen keys thousands of times)
KEY_CACHE = 8192
#: keys of one object looked at (a hostile object with a million keys stays cheap)
MAX_KEYS = 400
#: money objects held in money objects that are looked into (`{"gross": {"amount": …}}`)
MONEY_DEPTH = 1
#: a size by the shape of its value: a number (or fraction) and a unit, or "each"
_SIZE = re.compile(r"\s*(?:(?:\d*[.,]\d+|\d+/\d+|\d+)\s*(?:g|gr|grams?|mg|kg|oz|ounces?|ml|l|lbs?|"
                   r"pcs?|pieces?|ct|count|pk|pack|ea|each|units?)\.?|each|unit)\s*$", re.I)
_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+(?:\.\d+)?")

#: words of a price, in English and the languages menu and shop APIs are written in
#: (keys are split on ASCII letters: `preço` reads as "pre", "o" and is not matched)
PRICE = frozenset({"price", "prices", "pricing", "precio", "precios", "prix", "preis", "preise",
                   "prezzo", "prezzi", "prijs", "prijzen", "pris", "cena", "ceny", "hinta",
                   "fiyat", "harga", "preco", "precos"})
SALE = frozenset({"special", "specials", "sale", "discount", "discounted", "promo",
                  "promotional", "promotion", "deal", "reduced", "oferta", "rebaja", "descuento",
                  "promocion", "solde", "soldes", "remise", "angebot", "rabatt", "aktion",
                  "sconto", "scontato", "offerta", "aanbieding", "korting", "tilbud", "rea",
                  "alennus", "indirim", "indirimli", "promocja", "promocao", "desconto"})
#: the regular price beside a current one (`compare_at_price`, `regular_price`)
STRUCK = frozenset({"compare", "original", "was", "msrp", "strikethrough", "strike", "before",
                    "old", "regular"})
MEDICAL = frozenset({"med", "medical"})
CENTS = frozenset({"cents", "cent", "minor", "pennies", "penny"})
#: words that make a price-named field something other than what a buyer pays for the item
NOT_PAID = frozenset({"per", "tax", "taxes", "wholesale", "cost", "shipping", "fee", "deposit",
                      "min", "max", "low", "high", "range", "total", "sort", "id", "ids",
                      "currency", "type", "count", "percent", "percentage", "tier", "tiers",
                      "rule", "rules", "label", "labels", "formatted", "display", "text",
                      "off", "saving", "savings", "quantity", "qty", "cart", "limit"})
#: what may follow "per" in a price a buyer pays (`pricePerUnit`, not `pricePerGram`)
PER_PIECE = frozenset({("unit",), ("item",), ("each",), ("package",)})
WEIGHT = frozenset({"half", "two", "gram", "grams", "g", "eighth", "quarter", "ounce", "ounces",
                    "oz", "each", "unit", "mg", "ml", "kg", "lb", "pack", "single"})
OPTION_LISTS = frozenset({"variants", "variations", "options", "skus", "children", "sizes",
                          "weights", "tiers", "tier", "breaks", "ranges", "offers", "choices", "items",
                          "prices", "pricing", "inventory", "packages"})
#: arrays that hold products (or their groups), never one product's options
PRODUCT_LISTS = frozenset({"products", "product", "menu", "hits", "results", "edges", "nodes",
                           "listings", "catalog", "entries", "records", "data", "docs",
                           "categories", "groups", "collections", "related", "recommendations"})
LABEL_LISTS = frozenset({"options", "option", "weights", "weight", "sizes", "size", "labels",
                         "label", "units"})
#: every word given a meaning above (a key of only these and price words is not "plain")
KNOWN = (PRICE | SALE | STRUCK | MEDICAL | CENTS | NOT_PAID | WEIGHT | OPTION_LISTS
         | PRODUCT_LISTS | LABEL_LISTS | frozenset({"unit", "each", "item", "package", "rec",
                                                    "recreational", "adult", "use", "money",
                                                    "amount", "value", "base", "list", "net",
                                                    "gross", "final", "current", "sell", "selling"}))
NAMES = ("name", "title", "product name", "display name", "item name", "product title",
         "nombre", "titulo", "nom", "titre", "bezeichnung", "titel", "produktname", "nome",
         "naam", "navn", "nazwa", "producto", "produit", "prodotto")
LABELS = ("option", "label", "name", "title", "size", "weight", "display weight", "weight label",
          "unit size", "variant", "variant name", "package size", "description", "amount",
          "grams", "quantity", "unit")
UNITS = ("unit", "uom", "weight unit", "unit of measure", "units")
QUANTITIES = frozenset({"quantity", "qty", "stock", "inventory", "onhand", "on"})
AVAILABLE = frozenset({"available", "availability", "instock", "in", "stock", "status"})


@lru_cache(maxsize=KEY_CACHE)
def words(key: str) -> tuple[str, ...]:
    """The key's lower-case words: camelCase, snake_case and digits split apart."""
    return tuple(w.lower() for w in _WORD.findall(key))


@lru_cache(maxsize=KEY_CACHE)
def joined(key: str) -> str:
    return " ".join(words(key))


@lru_cache(maxsize=KEY_CACHE)
def is_name_key(key: str) -> bool:
    return joined(key) in NAMES


@lru_cache(maxsize=KEY_CACHE)
def is_price_key(key: str) -> bool:
    """A price a buyer pays (regular or special): `price`, `priceRec`, `sale_price`,
    `pricePerUnit`, … but not `pricePerGram`, `price_type`, `minPrice`, `taxPrice`."""
    found = words(key)
    if "amount" in found and set(found) & CENTS:  # amount_cents, amountInCents
        return not set(found) & NOT_PAID
    if not set(found) & PRICE or slot_weight(key) is not None:
        return False
    excluded = set(found) & NOT_PAID
    if excluded == {"per"} and found[found.index("per") + 1:][:1] in PER_PIECE:
        return True
    return not excluded


@lru_cache(maxsize=KEY_CACHE)
def is_plain_price_key(key: str) -> bool:
    """A price key whose other words have no meaning here (`price`, `q7Price`, `precio_x`):
    not per-unit, medical, cents, struck or a weight slot."""
    found = set(words(key))
    return is_price_key(key) and not found & (KNOWN - PRICE)


def is_money_in_cents(key: str, value: Any) -> bool:
    """A money object in minor units (`price_money: {"amount": 300}`, as Square's)."""
    return "money" in words(key) and isinstance(value, dict) and isinstance(value.get("amount"), int)


@lru_cache(maxsize=KEY_CACHE)
def is_sale_key(key: str) -> bool:
    return bool(set(words(key)) & SALE)


@lru_cache(maxsize=KEY_CACHE)
def is_struck_key(key: str) -> bool:
    return bool(set(words(key)) & STRUCK)


@lru_cache(maxsize=KEY_CACHE)
def is_medical(key: str) -> bool:
    return bool(set(words(key)) & MEDICAL)


@lru_cache(maxsize=KEY_CACHE)
def is_cents_key(key: str) -> bool:
    return bool(set(words(key)) & CENTS)


@lru_cache(maxsize=KEY_CACHE)
def is_option_list_key(key: str) -> bool:
    return bool(set(words(key)) & OPTION_LISTS) and not is_product_list_key(key)


@lru_cache(maxsize=KEY_CACHE)
def is_product_list_key(key: str) -> bool:
    return bool(set(words(key)) & PRODUCT_LISTS)


@lru_cache(maxsize=KEY_CACHE)
def is_label_list_key(key: str) -> bool:
    found = words(key)
    return bool(found) and found[-1] in LABEL_LISTS and not set(found) & PRICE


@lru_cache(maxsize=KEY_CACHE)
def slot_weight(key: str) -> str | None:
    """The weight of a per-weight price slot (`price_eighth_ounce` -> "eighth ounce",
    `priceGram` -> "gram", `discounted_price_half_gram` -> "half gram"), else None."""
    found = words(key)
    if not set(found) & PRICE:
        return None
    rest = [w for w in found if w not in PRICE and w not in SALE and w not in {"rec", "regular"}]
    if not rest or rest == ["unit"] or not all(w in WEIGHT or _is_number(w) for w in rest):
        return None  # `unitPrice`, `price_unit`: the price of the item, not a slot
    return " ".join(rest)


def _is_number(word: str) -> bool:
    return word[:1].isdigit()


def amount(value: Any, depth: int = 0) -> Decimal | None:
    """A positive price from a number, a numeric string or a money object, itself
    possibly held in one more (`{"gross": {"amount": 4.5, "currency": "USD"}}`)."""
    if isinstance(value, dict):
        inner = next((value[k] for k in islice(value, MAX_KEYS)
                      if joined(k) in ("amount", "value", "price", "raw", "gross", "cents")), None)
        if inner is None:  # {"taxed": {"amount": …}, "__typename": "…"}: its one object
            objects = [v for v in islice(value.values(), MAX_KEYS) if isinstance(v, dict)]
            inner = objects[0] if len(objects) == 1 else None
        if inner is None or (isinstance(inner, dict) and depth >= MONEY_DEPTH):
            return None
        return amount(inner, depth + 1)
    if isinstance(value, (list, tuple)):  # never a price read off a list's text
        return None
    if isinstance(value, float):
        try:
            value = Decimal(repr(value))
        except InvalidOperation:
            return None
    try:
        found = parse_amount(value, structured=True)
    except (ValueError, ArithmeticError):
        return None
    if found is None or not found.is_finite() or found <= 0 or found > MAX_PRICE:
        return None
    return found


def label_of(record: dict[str, Any], nested: bool = False) -> str | None:
    """An option's label: its option/label/name/size/weight field, a weight with its unit
    (looked for one object deep: `weightTolerance: {"name": "1g"}`)."""
    by_words = {joined(k): v for k, v in islice(record.items(), MAX_KEYS)}
    for wanted in LABELS:
        value = by_words.get(wanted)
        if isinstance(value, str) and value.strip() and len(value) <= 80:
            return value.strip()
        if isinstance(value, (int, Decimal)) and not isinstance(value, bool):
            unit = next((by_words[u] for u in UNITS if isinstance(by_words.get(u), str)), "")
            return f"{value}{unit}".strip()
    if nested:
        return None
    inner = (label_of(value, nested=True) for value in by_words.values() if isinstance(value, dict))
    return next((label for label in inner if label), None)


def size_label(record: dict[str, Any]) -> str | None:
    """The first string field whose value is a size by its shape (`"3.5g"`, `"1/8 oz"`,
    `"100 mg"`, `"each"`), whatever its key but a ratio's (`grams_per_eighth: "3.5 grams"`
    is a conversion, not the product's size): the label of a record's own price."""
    for key, value in islice(record.items(), MAX_KEYS):
        if (isinstance(value, str) and len(value) <= 24 and _SIZE.match(value)
                and "per" not in words(key)):
            return value.strip()
    return None


def stock_of(record: dict[str, Any]) -> tuple[int | None, bool | None]:
    """(a stock count, an in-stock flag) from the record's own fields."""
    count: int | None = None
    flag: bool | None = None
    for key, value in islice(record.items(), MAX_KEYS):
        found = set(words(key))
        negated = bool(found & {"sold", "out", "soldout"})
        if isinstance(value, bool):
            if found & AVAILABLE or negated:
                flag = (not value) if negated else value
        elif isinstance(value, int) and found & QUANTITIES and not found & {"max", "min", "limit"}:
            count = value if count is None else count
        elif isinstance(value, str) and found & AVAILABLE:
            squeezed = re.sub(r"[^a-z]", "", value.lower())
            if squeezed in ("outofstock", "soldout", "unavailable"):
                flag = False
            elif squeezed in ("instock", "available", "limitedstock", "lowstock"):
                flag = True
    return count, flag
