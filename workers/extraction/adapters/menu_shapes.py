"""Product records of an array whose field names say nothing: read by structure and
by the shape of the values.

Used by the generic menu reader when no element of an array is a product by its keys
(a platform that names its fields in another language, in abbreviations, or opaquely).
The array must hold at least two objects sharing keys; a shared key is a column (the
fields of objects an element holds are columns too, `attributes.name`, two levels deep);
zero is "not set":

- the **name** column holds varied strings, mostly letters, usually several words —
  not ids, urls, paths, dates, slugs or long descriptions;
- a **price** column holds positive numbers (or numeric strings) of plausible
  magnitude with at most two decimals; a key that names a price wins, then a column
  holding cents (whole numbers are more often counts and ids), then the largest
  (weights, ratings and per-unit prices are smaller than the price of the item) — and
  a key that names something else (`count`, `tax`, `per`, `id`) is never one;
- a **special** is a second price column lower than the price wherever both are set:
  when its key names a sale, or when it is set on only some of the products (a
  per-gram price is set on all of them);
- **options** are a column of arrays of objects, each with a label (a size by its
  shape, else a short varied string) and a price column of their own; or parallel
  arrays: one of sizes beside ones of amounts of the same length (`["1g", "2g"]`,
  `[43, 80]`, `[27.95, null]`), read as columns the same way.

Each element becomes a canonical record (`name`, `price`, `special_price`, `size` (a
value shaped like a size: `menu_fields.size_label`),
`variants: [{"label", "price", "special_price"}]`, and the element's stock fields) that
the key-based reader (`menu_options`) reads like any other. Work is bounded: the first
`SAMPLE` objects and `MAX_KEYS` keys of each decide the columns.
"""

from __future__ import annotations

import re
import statistics
from collections import Counter
from collections.abc import Callable
from decimal import Decimal, InvalidOperation
from itertools import islice
from typing import Any

from workers.extraction.adapters import menu_fields as f

__all__ = ["MIN_SHARE", "infer_records", "percent_off"]

#: objects of one array (and of its option arrays) that decide its columns
SAMPLE = 200
MAX_KEYS = 400
#: share of the sampled objects a key must appear in to be a column
SHARED = 0.6
#: a price column's median lies within these bounds (cents of a large price included)
LOWEST, HIGHEST = Decimal("0.5"), Decimal(100_000)
#: a special is at least this share of the price (a column far below is another quantity)
MIN_SHARE = Decimal("0.2")
#: share of a lower column's rows that must be a round percentage off the price
ROUND_OFF = Decimal("0.8")
#: how far a special may be from the price less its round discount (rounding to the cent)
CENT = Decimal("0.011")
_NUMBER = re.compile(r"\s*\d+(?:\.\d+)?\s*$")
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}|\d{1,2}/\d{1,2}/\d{2,4}")
_ID = re.compile(r"[0-9a-fA-F-]{8,}|[\w-]*\d[\w-]*")
_PATH = re.compile(r"[?=&]|/.*/")
_NOT_PRICE = f.NOT_PAID | f.QUANTITIES | frozenset({"weight", "rating", "thc", "cbd", "lat", "lon"})

Row = dict[str, Any]


def infer_records(items: list[Any]) -> list[Row | None] | None:
    """Each element as a canonical product record (None for one that is not), or None
    when the array's structure is not a product list's."""
    flat = [_flat(item) if isinstance(item, dict) else None for item in items]
    objects = [item for item in islice(flat, SAMPLE) if item is not None]
    if len(objects) < 2:
        return None
    columns = _columns(objects)
    name = _best_name(objects, columns)
    if name is None:
        return None
    price, special = _price_columns(objects, columns - {name})
    options, by_objects = _option_column(objects, columns - {name, price, special})
    parallel, by_lists = _parallel_columns(objects, columns - {name, price, special})
    if options is not None and parallel is not None:  # the more price-like reading wins
        options, parallel = (options, None) if by_objects >= by_lists else (None, parallel)
    if price is None and options is None and parallel is None:
        return None
    read = _reader(name, price, special, options, parallel)
    return [read(item) if item is not None else None for item in flat]


def _flat(item: Row, depth: int = 0) -> Row:
    """The object's fields and, two levels deep, those of the objects it holds, as
    `outer.inner` (JSON:API's `attributes`, a `prices` object, a `node`)."""
    found: Row = {}
    for key, value in islice(item.items(), MAX_KEYS):
        if isinstance(value, dict) and depth < 2:
            found.update({f"{key}.{inner}": v for inner, v in _flat(value, depth + 1).items()})
        else:
            found[key] = value
    return found


def _columns(objects: list[Row]) -> set[str]:
    counts = Counter(key for item in objects for key in islice(item, MAX_KEYS))
    return {key for key, count in counts.items() if count >= SHARED * len(objects)}


def _reader(name: str, price: str | None, special: str | None,
            options: tuple[str, str, str, str | None] | None,
            parallel: tuple[str, str, str | None] | None = None) -> Callable[[Row], Row | None]:
    def read(item: Row) -> Row | None:
        title = item.get(name)
        if not isinstance(title, str) or not title.strip():
            return None
        count, in_stock = f.stock_of(item)
        record: Row = {"name": title, "price": item.get(price) if price else None,
                       "special_price": item.get(special) if special else None,
                       "quantity": count, "in_stock": in_stock, "size": f.size_label(item)}
        if options is not None:
            record["variants"] = _variants(item.get(options[0]), *options[1:])
        elif parallel is not None:
            record["variants"] = _zipped(item, *parallel)
        return record
    return read


def _variants(value: Any, label: str, price: str, special: str | None) -> list[Row]:
    if not isinstance(value, list):
        return []
    found = []
    for element in islice(value, SAMPLE):
        if isinstance(element, dict):
            count, in_stock = f.stock_of(element)
            found.append({"label": _label_text(element.get(label)), "price": element.get(price),
                          "special_price": element.get(special) if special else None,
                          "quantity": count, "in_stock": in_stock})
    return found


def _label_text(value: Any) -> str | None:
    if isinstance(value, str):
        return value
    if isinstance(value, (int, Decimal)) and not isinstance(value, bool):
        return str(value)
    return None


def _best_name(objects: list[Row], columns: set[str]) -> str | None:
    scored = [(score, key) for key in columns if (score := _name_score(key, objects)) is not None]
    return max(scored)[1] if scored else None


def _name_score(key: str, objects: list[Row]) -> float | None:
    values = [item.get(key) for item in objects]
    texts = [v.strip() for v in values if isinstance(v, str) and _name_like(v)]
    if len(texts) < max(2, 0.8 * len(values)):
        return None
    distinct = len(set(texts)) / len(texts)
    if distinct < 0.5:
        return None
    spaced = sum(" " in t for t in texts) / len(texts)
    long = statistics.mean(len(t) for t in texts) > 100
    return distinct + spaced + (1.0 if f.is_name_key(key) else 0.0) - (2.0 if long else 0.0)


def _name_like(text: str) -> bool:
    stripped = text.strip()
    if not 2 <= len(stripped) <= 200 or "://" in stripped or "<" in stripped:
        return False
    if _DATE.match(stripped) or (" " not in stripped and (_ID.fullmatch(stripped)
                                                          or _PATH.search(stripped))):
        return False  # dates, ids, and paths or queries (a pager's `search/…?page=2`)
    letters = sum(c.isalpha() for c in stripped)
    return letters >= 0.5 * len(stripped.replace(" ", ""))


def _price_columns(objects: list[Row], columns: set[str]) -> tuple[str | None, str | None]:
    """(the price column, the special column beside it)."""
    money = {key: found for key in columns if (found := _money(key, objects)) is not None}
    if not money:
        return None, None
    by_rank = sorted(money, key=lambda k: _rank(k, money[k]), reverse=True)
    full = [k for k in by_rank if sum(v is not None for v in money[k]) >= SHARED * len(objects)]
    if not full:
        return None, None
    price = full[0]  # a column set on few rows is no product's price (it may be a special)
    specials = [key for key in by_rank if key != price
                and _lower_beside(money[key], money[price], key)]
    return price, (specials[0] if specials else None)


def _rank(key: str, amounts: list[Decimal | None]) -> tuple[bool, bool, Decimal]:
    """A key naming a price first; then a column with cents (whole-number columns are
    more often counts and ids); then the larger (weights, ratings, per-unit prices are
    smaller than the item's price)."""
    found = [a for a in amounts if a is not None]
    return (f.is_price_key(key) and not f.is_sale_key(key),
            any(a != a.to_integral_value() for a in found), statistics.median(found))


def _money(key: str, objects: list[Row]) -> list[Decimal | None] | None:
    """The column's amounts by row (None where unset), when it is a price-like column."""
    if set(f.words(key)) & _NOT_PRICE:
        return None
    amounts = [_amount(item.get(key)) for item in objects]
    set_ = [a for a in amounts if a is not None]
    if not set_ or any(item.get(key) not in (None, "", 0) and a is None for item, a in
                       zip(objects, amounts, strict=True)):
        return None  # a column of prices holds prices or nothing
    two_places = sum(_places(a) <= 2 for a in set_)
    if two_places < 0.95 * len(set_) or not LOWEST <= statistics.median(set_) <= HIGHEST:
        return None
    return amounts


def _places(amount: Decimal) -> int:
    exponent = amount.as_tuple().exponent
    return -exponent if isinstance(exponent, int) else 99


def _amount(value: Any) -> Decimal | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        if not _NUMBER.match(value):
            return None
        try:
            value = Decimal(value.strip())
        except InvalidOperation:
            return None
    if not isinstance(value, (int, Decimal)):
        return None
    found = Decimal(value).normalize()
    return found if Decimal(0) < found <= f.MAX_PRICE else None


def _lower_beside(column: list[Decimal | None], prices: list[Decimal | None], key: str) -> bool:
    """Lower than the price wherever both are set; named a sale, set on some rows only, or
    a whole percentage off the price on most rows (`percent_off`)."""
    pairs = [(s, p) for s, p in zip(column, prices, strict=True) if s is not None and p is not None]
    if not pairs or any(s >= p or s < MIN_SHARE * p for s, p in pairs):
        return False
    return (f.is_sale_key(key) or len(pairs) < 0.9 * sum(p is not None for p in prices)
            or percent_off(pairs))


def percent_off(pairs: list[tuple[Decimal, Decimal]]) -> bool:
    """Whether the lower amounts are the prices less a round discount (5 %, 10 %, … 80 %
    off, to the cent) on `ROUND_OFF` of the pairs, two at least: how a special sits beside
    its price. A per-gram price is the price over a weight (1/3.5, 1/7), a potency or a
    stock count bears no relation to it."""
    if len(pairs) < 2:
        return False
    return sum(_round_off(special, price) for special, price in pairs) >= ROUND_OFF * len(pairs)


def _round_off(special: Decimal, price: Decimal) -> bool:
    off = 100 - special * 100 / price
    step = (off / 5).to_integral_value() * 5
    return Decimal(5) <= step <= Decimal(80) and abs(price * (100 - step) / 100 - special) <= CENT


Rank = tuple[bool, bool, Decimal]
_NO_RANK: Rank = (False, False, Decimal(0))


def _price_rank(rows: list[Row], key: str, special: str | None = None) -> Rank:
    """A reading's rank (`_rank` of its price column); a special column beside it that
    carries cents counts as cents."""
    named, cents, median = _rank(key, [_amount(row.get(key)) for row in rows])
    if special is not None and not cents:
        cents = any(a is not None and a != a.to_integral_value()
                    for a in (_amount(row.get(special)) for row in rows))
    return named, cents, median


def _option_column(objects: list[Row], columns: set[str]
                   ) -> tuple[tuple[str, str, str, str | None] | None, Rank]:
    """(the column of option arrays, their label, price and special columns)."""
    for key in sorted(columns):
        if f.is_product_list_key(key):  # categories' products are products, not options
            continue
        elements = [e for item in objects if isinstance(item.get(key), list)
                    for e in islice(item[key], 20) if isinstance(e, dict)][:SAMPLE]
        if len(elements) < 2:
            continue
        inner = _columns(elements)
        price, special = _price_columns(elements, inner)
        label = _label_column(elements, inner - {price, special}) if price else None
        if price is not None and label is not None:
            return (key, label, price, special), _price_rank(elements, price, special)
    return None, _NO_RANK


def _label_column(elements: list[Row], columns: set[str]) -> str | None:
    def sized(key: str) -> float:
        values = [e.get(key) for e in elements]
        return sum(isinstance(v, str) and f.size_label({key: v}) is not None for v in values) / len(values)
    sizes = sorted(((sized(k), k) for k in columns), reverse=True)
    if sizes and sizes[0][0] >= 0.5:
        return sizes[0][1]
    short = [k for k in sorted(columns) if all(isinstance(e.get(k), str) and 0 < len(e[k]) <= 40
                                               for e in elements)
             and len({e[k] for e in elements}) > 1]  # one value everywhere is a type tag
    return short[0] if short else None


def _zipped(item: Row, labels: str, prices: str, specials: str | None) -> list[Row]:
    names, amounts = item.get(labels), item.get(prices)
    if not isinstance(names, list) or not isinstance(amounts, list) or len(names) != len(amounts):
        return []
    sales = item.get(specials) if specials else None
    if not isinstance(sales, list) or len(sales) != len(names):
        sales = [None] * len(names)
    return [{"label": _label_text(n), "price": a, "special_price": s}
            for n, a, s in islice(zip(names, amounts, sales, strict=True), SAMPLE)]


def _option_like(value: Any) -> bool:
    """An option label in a list: a size, or a short string holding a number ("1gC")."""
    return isinstance(value, str) and len(value) <= 24 and (
        f.size_label({"label": value}) is not None or any(c.isdigit() for c in value))


def _parallel_columns(objects: list[Row], columns: set[str]
                      ) -> tuple[tuple[str, str, str | None] | None, Rank]:
    """(the column of size lists, the price list beside it, the special list) for records
    holding parallel arrays (`["1g", "2g"]` beside `[43, 80]`)."""
    lists = {k for k in columns if all(isinstance(o.get(k), list) for o in objects)}
    for labels in sorted(lists):
        names = [o[labels] for o in objects]
        flat = [v for row in names for v in row[:20]]
        if not flat or sum(_option_like(v) for v in flat) < 0.5 * len(flat):
            continue
        rows = [{k: o[k][i] if o[k] else None for k in lists if len(o[k]) in (0, len(o[labels]))}
                for o in objects for i in range(min(len(o[labels]), 20))]  # [] is "not set"
        price, special = _price_columns(rows, _columns(rows) - {labels})
        if price is not None:
            return (labels, price, special), _price_rank(rows, price, special)
    return None, _NO_RANK
