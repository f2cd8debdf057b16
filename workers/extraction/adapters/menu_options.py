"""The purchasable options of one product record of an unknown menu API.

Menu APIs lay a product's options out in four ways; the first that yields a price wins:

1. an array of option objects (`variants`, `options`, `skus`, `priceBreaks`, …), each
   with its label and its own price, special and stock;
2. parallel arrays: labels (`Options: ["1g", "3.5g"]`) beside prices (`Prices`,
   `recPrices`, `medicalPrices`) and their specials (`recSpecialPrices`);
3. per-weight price slots, on the record (`price_gram`, `price_eighth_ounce`,
   `discounted_price_gram`) or in a price object (`prices: {"1g": 10, "3.5g": 30}`);
4. the record's own price (`price`, `priceRec`, `price: {"amount": …}`, `pricing: {…}`),
   labelled by a field whose value is a size (`"3.5g"`, `"1/8 oz"`, `"each"`);
5. one option object of its own (`bestOffer: {"price": 10, "unit": "pc"}`).

Within an option, a second plain price (its key naming nothing but a price and words
of no known meaning: `price` beside `q7Price`) lower than the first is the special; a
price whose key names a sale (`special`, `promo`, `discount`, `sale`)
is the special, one naming a struck price (`compare_at`, `original`, `msrp`) the
regular one; `…Med`/`medical…` prices are a separate, medical offer. A sale object
(`{"type": "percentage", "amount": 25}`) is applied to the regular price. Amounts
whose key names cents (`priceInCents`, `amount_cents`) or whose object names its minor
unit (`currency_minor_unit: 2`) are scaled to units here; bare integers that are cents
are recognised later, over the whole list (`generic_menu`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, replace
from decimal import Decimal
from typing import Any

from workers.extraction.adapters import menu_fields as f
from workers.extraction.adapters.menu_common import percent_off

__all__ = ["RawOffer", "read_options"]

#: option objects read per array, and keys per object (hostile records stay cheap)
MAX_OPTIONS = 300
MAX_KEYS = 400
#: words that give a field a meaning other than an unnamed amount's (a count, an id, a
#: potency, a rank)
_NAMED = (f.KNOWN | f.QUANTITIES | f.AVAILABLE | f.SALE | f.STRUCK
          | frozenset({"id", "sku", "code", "number", "position", "rank", "order", "index",
                       "score", "level", "step", "size", "version", "year", "age", "rating",
                       "thc", "cbd", "weight", "lat", "lon", "lng", "percent", "discount"}))
_NUMBER = re.compile(r"\s*\d+(?:\.\d+)?\s*")
_CENT = Decimal("0.01")
#: levels of objects within an option searched for the object that carries its price
OFFER_DEPTH = 2
#: objects (and arrays of one object) looked into per level, so that hostile nesting
#: stays cheap: an option's price holders, a record's objects holding option arrays
NESTED = 16
#: a second plain price is a special when at least this share of the first (a per-gram or
#: per-mg price beside the item's is far below it)
MIN_SHARE = Decimal("0.2")


@dataclass(frozen=True)
class RawOffer:
    """An option as read: amounts in units, except bare integers (`integral`) that may
    turn out to be cents once the whole menu is seen."""

    option: str
    regular: Decimal | None
    special: Decimal | None
    pricing_type: str = "regular"
    count: int | None = None
    in_stock: bool | None = None
    integral: bool = False
    #: amounts beside the price under keys that say nothing (`k36: "38.5"`), by key: a
    #: special the whole menu may reveal (`generic_menu`)
    unnamed: tuple[tuple[str, Decimal], ...] = ()
    #: labelled by a size-shaped field of the record itself (`"size": "3.5g"`), which may
    #: turn out to be the same on every product (a conversion, not a size: `generic_menu`)
    sized: bool = False

    def scaled(self, divisor: int) -> RawOffer:
        def div(value: Decimal | None) -> Decimal | None:
            return None if value is None else value / divisor
        return replace(self, regular=div(self.regular), special=div(self.special), integral=False,
                       unnamed=tuple((key, amount / divisor) for key, amount in self.unnamed))


def read_options(record: dict[str, Any], currency: str | None = None) -> list[RawOffer]:
    """The record's options (empty when it shows no price); of a price listed in several
    currencies, the one in `currency` (the menu's) when there is one."""
    for reader in (_from_option_objects, _from_parallel_lists, _from_slots):
        found = reader(record, currency)
        if found:
            return _on_sale(found, record)
    count, in_stock = f.stock_of(record)
    size = f.size_label(record)
    label = size or _one_weight(record) or "default"
    own = [replace(o, count=count, in_stock=in_stock, sized=size is not None and o.option == size)
           for o in _prices(label, record, currency)]
    return _on_sale(own or _from_offer_object(record, currency), record)


def _on_sale(offers: list[RawOffer], record: dict[str, Any]) -> list[RawOffer]:
    """A sale object of the whole product applied to the options that have no special."""
    sale = next((v for k, v in _items(record) if isinstance(v, dict) and f.is_sale_key(k)
                 and not f.is_price_key(k)), None)
    if sale is None:
        return offers
    return [replace(o, special=_sale_price(o.regular, sale))
            if o.special is None and o.regular is not None else o for o in offers]


def _items(record: dict[str, Any]) -> Iterable[tuple[str, Any]]:
    for index, item in enumerate(record.items()):
        if index >= MAX_KEYS:
            return
        yield item


def _from_option_objects(record: dict[str, Any], currency: str | None = None) -> list[RawOffer]:
    """Arrays under option-like keys first (`variants`, `skus`, …), then any array of
    priced objects (`weightTierInformation`) but one of products (`products`, `edges`);
    then the arrays an object of the record holds, one per unit
    (`prices: {"gram": [{…}], "ounce": [{…}]}`), all of them."""
    for _, value in _option_lists(record):
        offers = _options_of(value, currency)
        if offers:
            return offers
    holders = [holder for key, holder in _items(record)
               if isinstance(holder, dict) and not f.is_product_list_key(key)][:NESTED]
    return [offer for holder in holders for _, value in _option_lists(holder)[:NESTED]
            for offer in _options_of(value, currency)]


def _option_lists(record: dict[str, Any]) -> list[tuple[str, list[Any]]]:
    lists = [(key, value) for key, value in _items(record)
             if isinstance(value, list) and not f.is_product_list_key(key)]
    return sorted(lists, key=lambda pair: not f.is_option_list_key(pair[0]))


def _options_of(value: list[Any], currency: str | None = None) -> list[RawOffer]:
    return [offer for element in value[:MAX_OPTIONS] if isinstance(element, dict)
            for offer in _option(element, currency)]


def _option(element: dict[str, Any], currency: str | None = None, wrapped: bool = False
            ) -> list[RawOffer]:
    offers = _prices(f.label_of(element) or f.size_label(element) or "default", element, currency)
    if not offers and not wrapped:  # {"item_variation_data": {...}}, {"node": {...}}
        inner = _offer_holder(element)
        if inner is None:
            return []
        found = _option(inner, currency, wrapped=True)
        own = f.label_of(element) or f.size_label(element)
        if own and not (f.label_of(inner) or f.size_label(inner)):  # the seller's offer of a SKU
            found = [replace(offer, option=own) for offer in found]
        return found
    count, in_stock = f.stock_of(element)
    return [replace(offer, count=count, in_stock=in_stock) for offer in offers]


def _offer_holder(element: dict[str, Any]) -> dict[str, Any] | None:
    """The object within an option that carries its price, `OFFER_DEPTH` levels deep at
    most: a child object, or the first object of a child array (a SKU's
    `sellers[0].commertialOffer`), nearest first."""
    level = [element]
    for _ in range(OFFER_DEPTH):
        level = [child for holder in level for child in _children(holder)][:NESTED]
        found = next((child for child in level if _prices("x", child)), None)
        if found is not None:
            return found
    return None


def _children(holder: dict[str, Any]) -> list[dict[str, Any]]:
    found = []
    for key, value in _items(holder):
        if isinstance(value, list) and not f.is_product_list_key(key):
            value = next((v for v in value[:1] if isinstance(v, dict)), None)
        if isinstance(value, dict):
            found.append(value)
    return found


def _from_offer_object(record: dict[str, Any], currency: str | None = None) -> list[RawOffer]:
    """One option held in an object of its own (`bestOffer: {"price": 10, "unit": "pc"}`):
    the first child object, but a list of products, that carries a price; labelled by the
    record's one weight when the object has no label."""
    for key, value in _items(record):
        if isinstance(value, dict) and not f.is_product_list_key(key):
            offers = _option(value, currency, wrapped=True)
            if offers:
                weight = _one_weight(record)
                return [replace(o, option=weight) if weight and o.option == "default" else o
                        for o in offers]
    return []


def _from_parallel_lists(record: dict[str, Any], currency: str | None = None) -> list[RawOffer]:
    labels = next((v for k, v in _items(record) if f.is_label_list_key(k) and isinstance(v, list)
                   and v and all(isinstance(x, (str, int, Decimal)) for x in v)), None)
    if labels is None:
        return []
    lists = {k: v for k, v in _items(record) if isinstance(v, list) and len(v) == len(labels)
             and set(f.words(k)) & f.PRICE and not set(f.words(k)) & f.NOT_PAID}
    offers: list[RawOffer] = []
    for key, prices in lists.items():
        if f.is_sale_key(key) or f.is_struck_key(key):
            continue
        specials = next((v for k, v in lists.items() if f.is_sale_key(k)
                         and _without_sale(k) == f.words(key)), [None] * len(labels))
        kind = "medical" if f.is_medical(key) else "regular"
        for label, price, special in zip(labels, prices, specials, strict=True):
            regular = f.amount(price)
            if regular is not None:
                offers.append(RawOffer(str(label), regular, f.amount(special), kind,
                                       integral=isinstance(price, int)))
    return _unique(offers)


def _without_sale(key: str) -> tuple[str, ...]:
    return tuple(w for w in f.words(key) if w not in f.SALE)


def _from_slots(record: dict[str, Any], currency: str | None = None) -> list[RawOffer]:
    regular: dict[str, tuple[Decimal, bool]] = {}
    special: dict[str, Decimal] = {}
    holders = [(record, False)] + [(v, True) for k, v in _items(record)
                                   if isinstance(v, dict) and set(f.words(k)) & f.PRICE]
    for holder, bare_keys_allowed in holders:
        for key, value in _items(holder):
            weight = f.slot_weight(key) or (_bare_weight(key) if bare_keys_allowed else None)
            if weight is None:
                continue
            if f.is_sale_key(key):
                found = _special_amount(value)
                if found is not None:
                    special.setdefault(weight, found)
            elif (found := f.amount(value)) is not None:
                regular.setdefault(weight, (found, isinstance(value, int)))
    return [RawOffer(weight, price, special.get(weight), integral=integral)
            for weight, (price, integral) in regular.items()]


def _bare_weight(key: str) -> str | None:
    """A price object's key that is a weight itself (`"3.5g"`, `"eighth"`, `"half_gram"`)."""
    found = f.words(key)
    if found == ("unit",):  # {"unit": 20, "gram": 10}: the price of the item itself
        return "default"
    if found and all(w in f.WEIGHT or w[:1].isdigit() for w in found):
        return key.replace("_", " ").strip()
    return None


def _special_amount(value: Any) -> Decimal | None:
    if isinstance(value, dict):  # {"price": 45, "discount_price": 33.75}
        inner = next((v for k, v in _items(value) if f.is_sale_key(k) and f.is_price_key(k)), None)
        return f.amount(inner) if inner is not None else None
    return f.amount(value)


def _prices(option: str, record: dict[str, Any], currency: str | None = None, nested: bool = False
            ) -> list[RawOffer]:
    """The record's own regular/special/struck prices, one offer per menu (regular, medical);
    a price object (`pricing: {price_sell: …}`) is looked into, one level deep, and when
    none of its keys names a price, its one set amount is the price."""
    groups: dict[str, dict[str, Any]] = {}
    scale = _minor_unit_scale(record)
    unnamed: list[tuple[str, Decimal]] = []  # a price object's one set amount is its price
    unnamed_ints = 0
    for key, value in _items(record):
        if not f.is_price_key(key):
            if f.is_sale_key(key) and isinstance(value, dict):
                groups.setdefault("regular", {}).setdefault("sale", value)
            elif (found := _unnamed_amount(key, value)) is not None:
                unnamed.append((key, found))
                unnamed_ints += isinstance(value, int)
            continue
        if isinstance(value, dict) and not nested:  # pricing: {price_sell: …}
            inside = _prices(f.size_label(value) or option, value, currency, nested=True)
            if inside:
                return inside
        if isinstance(value, list):  # prices: [{currency_code: eur, amount: 1950}, {… usd …}]
            value = _money_in(value, currency)
        found = f.amount(value)
        if found is None:
            continue
        cents = f.is_cents_key(key) or f.is_money_in_cents(key, value)
        if cents or scale != 1:
            found /= 100 if cents else scale
        group = groups.setdefault("medical" if f.is_medical(key) else "regular", {})
        role = "special" if f.is_sale_key(key) else "struck" if f.is_struck_key(key) else "price"
        if role == "price" and "price" in group and f.is_plain_price_key(key):
            group.setdefault("second", found)
        group.setdefault(role, found)
        if role == "price":
            group.setdefault("integral", _whole(value) and scale == 1 and not cents)
    if nested and not groups and len(unnamed) == 1:  # prices: {k26: 22, k23: 0, k22: null}
        return [RawOffer(option, unnamed[0][1], None, integral=unnamed_ints == 1)]
    offers = [offer for kind, group in groups.items() if (offer := _offer(option, kind, group))]
    return [replace(offer, unnamed=tuple(unnamed)) if offer.pricing_type == "regular"
            and offer.special is None and unnamed else offer for offer in offers]


def _one_weight(record: dict[str, Any]) -> str | None:
    """The one weight a list of the record names (`["eighth ounce"]`, `["3.5g"]`): the
    label of the record's own price when nothing else labels it."""
    for _, value in _items(record):
        if isinstance(value, list) and len(value) == 1 and isinstance(value[0], str):
            text = value[0].strip()
            found = text.replace("_", " ").lower().split()
            if f.size_label({"label": text}) or (found and all(w in f.WEIGHT for w in found)):
                return text
    return None


def _money_in(values: list[Any], currency: str | None) -> dict[str, Any] | None:
    """Of a list of money objects, the one in `currency`, else the first."""
    money = [v for v in values[:MAX_OPTIONS] if isinstance(v, dict) and f.amount(v) is not None]
    wanted = (currency or "").upper()
    return next((m for m in money if _currency_of(m) == wanted), money[0] if money else None)


def _currency_of(money: dict[str, Any]) -> str | None:
    return next((v.strip().upper() for k, v in _items(money) if "currency" in f.words(k)
                 and isinstance(v, str) and len(v.strip()) == 3 and v.strip().isalpha()), None)


def _whole(value: Any) -> bool:
    """A bare integer amount, or a money object's (`{"amount": 1950}`): maybe cents."""
    if isinstance(value, dict):
        value = next((v for k, v in _items(value) if f.joined(k) in ("amount", "value")), None)
    return isinstance(value, int) and not isinstance(value, bool)


def _unnamed_amount(key: str, value: Any) -> Decimal | None:
    """An amount (a number or a numeric string, two decimals at most) under a key none of
    whose words has a meaning here."""
    if isinstance(value, bool) or not isinstance(value, (int, Decimal, str)):
        return None
    if set(f.words(key)) & _NAMED:
        return None
    found = f.amount(value) if not isinstance(value, str) or _NUMBER.fullmatch(value) else None
    if found is None or found != found.quantize(_CENT):
        return None
    return found


def _offer(option: str, kind: str, group: dict[str, Any]) -> RawOffer | None:
    struck, special = group.get("struck"), group.get("special")
    price = group.get("price", struck)
    if price is None:
        return None
    second = group.get("second")
    if special is None and second is not None and MIN_SHARE * price <= second < price:
        special = second  # two plain prices: the lower is what a buyer pays now
    if struck is not None and struck > price:
        price, special = struck, price
    if special is None and isinstance(group.get("sale"), dict):
        special = _sale_price(price, group["sale"])
    return RawOffer(option, price, special, kind, integral=bool(group.get("integral")))


def _sale_price(regular: Decimal, sale: dict[str, Any]) -> Decimal | None:
    """A sale object applied: `{"type": "percentage", "amount": 25}` or `{"percent": 25}`
    take a percentage off, `{"type": "fixed", "amount": 5}` an amount."""
    by_words = {" ".join(f.words(k)): v for k, v in _items(sale)}
    percent = f.amount(by_words.get("percent") or by_words.get("percentage")
                       or by_words.get("percent off"))
    kind = str(by_words.get("type") or by_words.get("discount type") or "").lower()
    off = f.amount(by_words.get("amount") or by_words.get("value"))
    if percent is None and off is not None and "percent" in kind:
        percent = off
    if percent is not None:
        return percent_off(regular, percent) if percent < 100 else None
    return regular - off if off is not None and off < regular else None


def _minor_unit_scale(record: dict[str, Any]) -> int:
    for key, value in _items(record):
        found = set(f.words(key))
        if {"minor", "unit"} <= found and isinstance(value, int) and 0 <= value <= 4:
            return int(10 ** value)
    return 1


def _unique(offers: list[RawOffer]) -> list[RawOffer]:
    """One offer per option and menu: `Prices` beside `recPrices` + `recSpecialPrices`
    name the same options, and the one with its special says what a buyer pays."""
    kept: dict[tuple[str, str], RawOffer] = {}
    for offer in offers:
        key = (offer.option, offer.pricing_type)
        if key not in kept or (kept[key].special is None and offer.special is not None):
            kept[key] = offer
    return list(kept.values())
