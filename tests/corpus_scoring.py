"""Scoring an extractor against the real-page corpus (tests/corpus/manifest.json).

An extractor is `(page_bytes, url) -> Found(price, currency, availability)` for the
page's main product. Per entry and field:

- price + currency: right when the found price equals one of the truth's prices
  (as decimals) and, where the truth names one, the currency matches;
- availability: right when it equals the truth's (`in_stock` / `out_of_stock`).

Entries whose truth lacks a field are not scored on it. `score` returns, per slice
(`all`, each manifest slice, each shop country TLD group is not used: slices are the
manifest's), the counts of right answers and of scored entries.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any

import corpus_files


@dataclass(frozen=True)
class Found:
    price: Decimal | None = None
    currency: str | None = None
    availability: str | None = None


Extractor = Callable[[bytes, str], Found]


def entries(kind: str = "page") -> list[dict[str, Any]]:
    """The manifest's entries of this kind, whether or not their bytes are present."""
    return [e for e in corpus_files.manifest() if e.get("kind", "page") == kind]


def present(kind: str = "page") -> list[dict[str, Any]]:
    """The entries whose bytes are present (see corpus_files for where they are looked for)."""
    return corpus_files.presence(entries(kind)).present


def body(entry: dict[str, Any]) -> bytes:
    """The page's bytes, decompressed."""
    return corpus_files.content(entry["file"])


def _decimal(value: Any) -> Decimal | None:
    try:
        return Decimal(str(value)).normalize()
    except (InvalidOperation, ValueError):
        return None


def judge(entry: dict[str, Any], found: Found) -> dict[str, bool]:
    """field -> right? for the fields this entry's truth can score."""
    truth, verdict = entry["truth"], {}
    prices = {_decimal(p) for p in truth.get("price") or []}
    if prices:
        right_price = found.price is not None and found.price.normalize() in prices
        right_currency = truth.get("currency") is None or found.currency == truth["currency"]
        verdict["price_currency"] = right_price and right_currency
    if truth.get("availability"):
        verdict["availability"] = found.availability == truth["availability"]
    return verdict


#: verdict field -> its name in an entry's `first_sight` record (tests/corpus/README.md)
FIRST_SIGHT_NAMES = {"price_currency": "price", "availability": "availability"}


def first_sight(entry: dict[str, Any]) -> dict[str, bool]:
    """The entry's recorded first sight as a verdict (field -> right), like `judge`'s."""
    recorded = entry["first_sight"]
    return {field: bool(recorded[name]) for field, name in FIRST_SIGHT_NAMES.items()
            if name in recorded}


def first_sight_record(verdict: dict[str, bool]) -> dict[str, bool]:
    """A verdict as the fields of a `first_sight` record."""
    return {FIRST_SIGHT_NAMES[field]: right for field, right in verdict.items()}


@dataclass
class Tally:
    right: int = 0
    scored: int = 0

    @property
    def rate(self) -> float:
        return self.right / self.scored if self.scored else 0.0


def score(extract: Extractor, selected: Iterable[dict[str, Any]] | None = None
          ) -> tuple[dict[str, dict[str, Tally]], dict[str, dict[str, bool]]]:
    """(slice -> field -> Tally, entry id -> its verdict)."""
    tallies: dict[str, dict[str, Tally]] = defaultdict(lambda: defaultdict(Tally))
    verdicts = {}
    for entry in present() if selected is None else selected:
        try:
            found = extract(body(entry), entry["url"])
        except Exception:  # noqa: BLE001 - a crash scores as "found nothing"
            found = Found()
        verdict = judge(entry, found)
        verdicts[entry["id"]] = verdict
        for name in ("all", *entry.get("slices", [])):
            for field, right in verdict.items():
                tally = tallies[name][field]
                tally.scored += 1
                tally.right += right
    return tallies, verdicts


def table(named: dict[str, dict[str, dict[str, Tally]]]) -> list[str]:
    """Lines of a slice x (extractor, field) table, e.g. {"ours": ..., "baseline": ...}."""
    names = list(named)
    fields = ("price_currency", "availability")
    slices = sorted({s for t in named.values() for s in t}, key=lambda s: (s != "all", s))
    head = f"{'slice':<22}" + "".join(f"{n + ' ' + f[:5]:>18}" for n in names for f in fields)
    lines = [head, "-" * len(head)]
    for name in slices:
        cells = []
        for extractor in names:
            for field in fields:
                tally = named[extractor].get(name, {}).get(field)
                cells.append(f"{tally.rate:>9.1%} {tally.right:>3}/{tally.scored:<4}" if tally
                             and tally.scored else f"{'-':>18}")
        lines.append(f"{name:<22}" + "".join(cells))
    return lines


def ours(page: bytes, url: str) -> Found:
    """crawl-ledger's extractor, as a crawl runs it (content detection, first product)."""
    from workers.extraction.adapters.base import Page
    from workers.extraction.extract import extract_page
    from workers.fetching.fetch import decode_body

    _, extraction = extract_page(Page(url=url, text=decode_body(page, "text/html"), body=page,
                                      content_type="text/html"))
    if not extraction.observations:
        return Found()
    obs = extraction.observations[0]
    offer = next((o for o in obs.offers if o.price is not None or o.special_price is not None),
                 obs.offers[0] if obs.offers else None)
    price = None if offer is None else (offer.special_price if offer.special_price is not None
                                        else offer.price)
    availability = obs.availability if obs.availability != "unknown" else None
    return Found(price, offer.currency if offer else None, availability)


#: the URL `crawl-ledger extract FILE` gives a saved page (`file://…`): no shop, no country
SAVED_PAGE = "file:///tmp/page.html"


def ours_without_url(page: bytes, url: str) -> Found:
    """crawl-ledger's extractor as the maintainers score it: `crawl-ledger extract FILE
    --json` (bytes decoded as the command does, the file's URL, no shop URL), the first
    product's first priced offer, its effective price the special when lower."""
    from workers.extraction.adapters.base import ExtractionError, Page
    from workers.extraction.extract import extract_page
    from workers.fetching.charset import decode

    text, _ = decode(page)
    kind = "application/json" if text.lstrip().startswith(("{", "[")) else "text/html"
    try:
        _, extraction = extract_page(Page(url=SAVED_PAGE, text=text, content_type=kind, body=page))
    except ExtractionError:
        return Found()
    if not extraction.observations:
        return Found()
    obs = extraction.observations[0]
    offer = next((o for o in obs.offers if o.price is not None or o.special_price is not None),
                 obs.offers[0] if obs.offers else None)
    price = None if offer is None else offer.price
    if offer is not None and offer.special_price is not None and (
            price is None or offer.special_price < price):
        price = offer.special_price
    availability = obs.availability if obs.availability != "unknown" else None
    return Found(price, offer.currency if offer else None, availability)


def visible_alone(page: bytes, url: str) -> Found:
    """The visible ranking alone (`workers.extraction.adapters.visible`), structured data ignored and
    no URL: what decides on a page without structured data, scored on every page."""
    from workers.extraction.adapters.structured_data import parse_html, read_head_data
    from workers.extraction.adapters.visible import read_visible
    from workers.extraction.currency import where_from
    from workers.extraction.page_language import declared_language
    from workers.fetching.charset import decode

    tree = parse_html(decode(page)[0])
    if tree is None:
        return Found()
    data = read_head_data(tree)
    seen = read_visible(tree, where_from(SAVED_PAGE, declared_language(
        tree.get("lang"), data.content_language), data.opengraph.get("og:locale"), None))
    if seen.price is None:
        return Found()
    return Found(seen.price.amount, seen.price.currency)


_SCHEMA_AVAILABILITY = {"instock": "in_stock", "outofstock": "out_of_stock",
                        "soldout": "out_of_stock", "discontinued": "out_of_stock"}


def baseline(page: bytes, url: str) -> Found:
    """The naive script: extruct's first Product offer, price-parser for the amount."""
    import extruct
    from price_parser import Price

    data = extruct.extract(page, base_url=url, syntaxes=["json-ld", "microdata", "opengraph"],
                           uniform=True, errors="ignore")
    for item in _items(data.get("json-ld", []) + data.get("microdata", [])):
        if "Product" not in str(item.get("@type", "")):
            continue
        offers = item.get("offers")
        offer = (offers[0] if isinstance(offers, list) and offers else offers) or {}
        if not isinstance(offer, dict):
            continue
        raw = offer.get("price", offer.get("lowPrice"))
        parsed = Price.fromstring(str(raw)) if raw is not None else None
        availability = str(offer.get("availability", "")).rsplit("/", 1)[-1].lower()
        currency = offer.get("priceCurrency") or (parsed.currency if parsed else None)
        return Found(parsed.amount if parsed else None, currency,
                     _SCHEMA_AVAILABILITY.get(availability))
    for og in data.get("opengraph", []):
        amount = og.get("product:price:amount") or og.get("og:price:amount")
        if amount:
            parsed = Price.fromstring(str(amount))
            return Found(parsed.amount, og.get("product:price:currency")
                         or og.get("og:price:currency"))
    return Found()


def _items(found: list[Any]) -> Iterable[dict[str, Any]]:
    for item in found:
        if isinstance(item, dict):
            yield item
            yield from _items(item.get("@graph", []))
