"""Scoring a menu reader against the dispensary corpus (tests/corpus/dispensary/manifest.json),
for the dispensary tests and the bench alike (bytes through corpus_files).

Each entry's truth lists items (product name, option, the price a buyer pays). An item is
right when the reader found that product and option at that effective price (the special
when there is one, else the price). Names compare with whitespace collapsed and case
folded; options with whitespace removed and case folded, `None`/"" as "default". With
`same_weights`, options that name the same weight in other words compare equal too
("eighth ounce", "1/8 oz", "eighth"; "gram", "1 g"; "each", "unit", "default"): a reader
that does not know a platform's labelling convention is not marked wrong for it.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import corpus_files

from domain.values import Observation

__all__ = ["ADAPTER_FOR", "MENUS", "Row", "blinded_names", "extraction", "found", "generic_alone",
           "hits", "key", "leave_one_platform_out", "manifest", "prices_by_key", "priced", "text",
           "total"]

MENUS = "dispensary/manifest.json"

#: corpus platform -> the adapter that must claim its payloads; a platform not named here
#: has no adapter, and its payloads are read by the generic menu reader alone
ADAPTER_FOR = {
    "weedmaps": "weedmaps",
    "dutchie_plus": "dutchie-plus",
    "dutchie": "dispensary",
    "sweed": "sweed",
    "dispense": "dispense",
    "jane": "jane",
}

Key = tuple[str, str]

_SAME_WEIGHT = {
    "default": ("each", "unit", "default", "1unit", "1each", "1ea"),
    "0.5g": ("halfgram", "1/2g", "0.5g", ".5g", "halfg"),
    "1g": ("gram", "1g", "onegram", "1gram"),
    "2g": ("twogram", "twograms", "2g", "2grams"),
    "1/8oz": ("eighth", "eighthounce", "1/8oz", "1/8", "1/8ounce"),
    "1/4oz": ("quarter", "quarterounce", "1/4oz", "1/4", "1/4ounce"),
    "1/2oz": ("halfounce", "halfoz", "1/2oz", "1/2", "1/2ounce"),
    "1oz": ("ounce", "1oz", "oneounce", "1ounce", "oz"),
}
_CANONICAL = {spelling: name for name, spellings in _SAME_WEIGHT.items() for spelling in spellings}


def manifest() -> list[dict[str, Any]]:
    """The menu payloads' entries, whether or not their bytes are present."""
    return corpus_files.manifest(MENUS)


def text(entry: dict[str, Any]) -> str:
    """The payload's text, decompressed."""
    return corpus_files.content(corpus_files.relative(entry, MENUS)).decode("utf-8")


def key(name: str, option: str | None, same_weights: bool = False) -> Key:
    label = "default" if option in (None, "", "default") else option
    squeezed = "".join(label.split()).casefold()
    if same_weights:
        squeezed = _CANONICAL.get(re.sub(r"[_\-]", "", squeezed), squeezed)
    return " ".join(name.split()).casefold(), squeezed


def prices_by_key(observations: tuple[Observation, ...], same_weights: bool = False
                  ) -> dict[Key, set[Decimal]]:
    """(name, option) -> the effective prices found for it."""
    prices: dict[Key, set[Decimal]] = defaultdict(set)
    for obs in observations:
        for offer in obs.offers:
            paid = offer.special_price if offer.special_price is not None else offer.price
            if paid is not None:
                prices[key(obs.name, offer.option, same_weights)].add(paid)
    return prices


def hits(entry: dict[str, Any], prices: dict[Key, set[Decimal]], same_weights: bool = False) -> int:
    """How many of the entry's truth items were found at their effective price."""
    return sum(Decimal(item["price"]) in prices.get(key(item["name"], item["option"], same_weights), ())
               for item in entry["truth"]["items"])


def extraction(entry: dict[str, Any]) -> tuple[str, tuple[Observation, ...]]:
    """What `extract_page` makes of the payload, as a crawl runs it: (adapter name, products);
    a payload nothing recognises is ("none", ()) — every option missed, as a crawl records it."""
    from workers.extraction.adapters.base import ExtractionError, Page
    from workers.extraction.extract import extract_page

    try:
        adapter, extracted = extract_page(Page(url=f"https://corpus.invalid/{entry['id']}",
                                               text=text(entry)))
    except ExtractionError:
        return "none", ()
    return adapter.name, extracted.observations


def found(entry: dict[str, Any]) -> tuple[str, int, dict[Key, set[Decimal]]]:
    """(adapter name, products found, effective prices by (name, option))."""
    adapter, observations = extraction(entry)
    return adapter, len(observations), prices_by_key(observations)


def priced(observations: tuple[Observation, ...]) -> int:
    """How many of the products carry a price (a payload may list one whose every price is
    0: the adapters report it, priceless; a reader that knows a product by its name and a
    price cannot)."""
    return sum(any(o.price is not None or o.special_price is not None for o in obs.offers)
               for obs in observations)


@dataclass(frozen=True)
class Row:
    """One payload's score: products found / in the truth, items right (strict labels,
    same-weight labels) / truth items."""

    entry_id: str
    platform: str
    products: int
    truth_products: int
    strict: int
    same_weights: int
    items: int


def generic_alone(entries: Iterable[dict[str, Any]]) -> list[Row]:
    """The generic menu reader on each payload, no platform adapter involved."""
    from workers.extraction.adapters.generic_menu import read_menu
    from workers.extraction.adapters.json_walk import load

    rows = []
    for entry in entries:
        data = load(text(entry))
        read = read_menu(data, entry["truth"].get("currency") or "USD")
        rows.append(Row(entry["id"], entry["platform"], len(read), entry["truth"]["products"],
                        hits(entry, prices_by_key(read)),
                        hits(entry, prices_by_key(read, True), True),
                        len(entry["truth"]["items"])))
    return rows


def total(rows: list[Row]) -> tuple[float, float]:
    """(strict, same-weights) share of all truth items found at their effective price."""
    items = sum(row.items for row in rows)
    if not items:
        return 0.0, 0.0
    return sum(row.strict for row in rows) / items, sum(row.same_weights for row in rows) / items


def _keys(node: Any, found: set[str], depth: int = 0) -> None:
    if depth > 64:
        return
    if isinstance(node, dict):
        for name, value in node.items():
            found.add(name)
            _keys(value, found, depth + 1)
    elif isinstance(node, list):
        for value in node:
            _keys(value, found, depth + 1)


def _renamed(node: Any, names: dict[str, str], depth: int = 0) -> Any:
    if depth > 64:
        return node
    if isinstance(node, dict):
        return {names.get(k, k): _renamed(v, names, depth + 1) for k, v in node.items()}
    if isinstance(node, list):
        return [_renamed(v, names, depth + 1) for v in node]
    return node


def blinded_names(own: set[str], others: set[str], by: str) -> dict[str, str]:
    """Key -> its blinded name, for a platform whose payloads use the keys `own` when the
    other platforms' use `others`. `by="words"`: every word of a key (`menu_fields.words`)
    that no other platform's key holds becomes an opaque token (`promoPrice` ->
    `q7_price` when only this platform says "promo"); `by="keys"`: every key no other
    platform uses becomes an opaque token (`promoPrice` -> `k3`, `name` too when only
    this platform says `name`)."""
    from workers.extraction.adapters.menu_fields import words

    if by == "keys":
        return {k: f"k{i}" for i, k in enumerate(sorted(own - others))}
    theirs = {w for k in others for w in words(k)}
    tokens = {w: f"q{i}" for i, w in enumerate(sorted({w for k in own for w in words(k)} - theirs))}
    return {k: "_".join(tokens.get(w, w) for w in words(k)) for k in own
            if any(w in tokens for w in words(k))}


def leave_one_platform_out(entries: list[dict[str, Any]], by: str = "words") -> list[Row]:
    """The generic reader on each payload with what only its platform's keys say hidden
    from it (`blinded_names`): how it reads a platform whose field names it never met.
    JSON strings inside the JSON are left as they are."""
    from workers.extraction.adapters.generic_menu import read_menu
    from workers.extraction.adapters.json_walk import load

    data = {e["id"]: load(text(e)) for e in entries}
    keys: dict[str, set[str]] = defaultdict(set)
    for entry in entries:
        _keys(data[entry["id"]], keys[entry["platform"]])
    rows = []
    for entry in entries:
        platform = entry["platform"]
        others = set().union(*(k for p, k in keys.items() if p != platform))
        payload = _renamed(data[entry["id"]], blinded_names(keys[platform], others, by))
        read = read_menu(payload, entry["truth"].get("currency") or "USD")
        rows.append(Row(entry["id"], platform, len(read), entry["truth"]["products"],
                        hits(entry, prices_by_key(read)),
                        hits(entry, prices_by_key(read, True), True),
                        len(entry["truth"]["items"])))
    return rows
