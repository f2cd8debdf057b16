"""Scoring the menu readers against the real menu payloads (tests/corpus/dispensary).

An item of a payload's truth is right when the extraction has an offer for the same
product name and option (spacing and case aside) whose effective price — the special
price when there is one, else the price — equals the item's price.
"""

from __future__ import annotations

import gzip
import json
from collections import defaultdict
from decimal import Decimal
from pathlib import Path
from typing import Any

DISPENSARY = Path(__file__).resolve().parent / "corpus" / "dispensary"
#: payload bytes kept out of git (bench/corpus_cache.py re-creates them)
CACHE = DISPENSARY.parent.parent.parent / ".corpus-cache" / "dispensary"

Prices = dict[tuple[str, str], set[Decimal]]


def manifest() -> list[dict[str, Any]]:
    entries: list[dict[str, Any]] = json.loads((DISPENSARY / "manifest.json").read_text("utf-8"))
    return entries


def locate(file: str) -> Path:
    """The payload in the repository, else in `.corpus-cache/dispensary/`."""
    return DISPENSARY / file if (DISPENSARY / file).is_file() else CACHE / file


def text(entry: dict[str, Any]) -> str:
    raw = locate(entry["file"]).read_bytes()
    return (gzip.decompress(raw) if entry["file"].endswith(".gz") else raw).decode("utf-8")


def key(name: str, option: str | None) -> tuple[str, str]:
    label = "default" if option in (None, "", "default") else option
    return " ".join(name.split()).casefold(), "".join(label.split()).casefold()


def found(entry: dict[str, Any]) -> tuple[str, int, Prices]:
    """(adapter name, products found, effective prices by (name, option))."""
    from workers.adapters.base import Page
    from workers.extraction import extract_page

    page = Page(url=f"https://corpus.invalid/{entry['id']}", text=text(entry))
    adapter, extraction = extract_page(page)
    prices: Prices = defaultdict(set)
    for obs in extraction.observations:
        for offer in obs.offers:
            paid = offer.special_price if offer.special_price is not None else offer.price
            if paid is not None:
                prices[key(obs.name, offer.option)].add(paid)
    return adapter.name, len(extraction.observations), prices


def hits(entry: dict[str, Any], prices: Prices) -> int:
    items = entry["truth"]["items"]
    return sum(Decimal(item["price"]) in prices.get(key(item["name"], item["option"]), ())
               for item in items)
