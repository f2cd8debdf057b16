"""Real dispensary menu payloads (tests/corpus/dispensary) read by `extract_page`.

Each payload's truth in manifest.json was read off the payload by hand (its
`truth_rule` says how); the adapters must find at least 95 % of the truth items
(matched by product name and option) at their effective price, i.e. what the
customer pays: the special price when there is one, else the price.
"""

from __future__ import annotations

import gzip
import hashlib
import json
from collections import defaultdict
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from workers.adapters.base import Page
from workers.extraction import extract_page

CORPUS = Path(__file__).parent.parent / "corpus" / "dispensary"
#: payload bytes kept out of git (bench/corpus_cache.py re-creates them)
CACHE = Path(__file__).resolve().parent.parent.parent / ".corpus-cache" / "dispensary"
MANIFEST: list[dict[str, Any]] = json.loads((CORPUS / "manifest.json").read_text("utf-8"))
#: The private evaluation set's digests, in a `shared/` directory beside some ancestor of this checkout.
_CANDIDATES = (parent / "shared" / "holdout-sha256.txt" for parent in Path(__file__).resolve().parents)
HOLDOUT = next((path for path in _CANDIDATES if path.exists()), None)
THRESHOLD = Decimal("0.95")

#: The adapter each corpus platform must be detected as.
ADAPTER_FOR = {
    "weedmaps": "weedmaps",
    "dutchie_plus": "dutchie-plus",
    "dutchie": "dispensary",
    "sweed": "sweed",
    "dispense": "dispense",
    "jane": "jane",
}


def _files() -> list[Path]:
    return [path for folder in (CORPUS, CACHE) if folder.is_dir() for path in folder.iterdir()
            if path.name != "manifest.json"]


def _text(entry: dict[str, Any]) -> str:
    raw = (CORPUS / entry["file"] if (CORPUS / entry["file"]).is_file() else CACHE / entry["file"]).read_bytes()
    return (gzip.decompress(raw) if entry["file"].endswith(".gz") else raw).decode("utf-8")


def _key(name: str, option: str | None) -> tuple[str, str]:
    label = "default" if option in (None, "", "default") else option
    return " ".join(name.split()).casefold(), "".join(label.split()).casefold()


def _found(entry: dict[str, Any]) -> tuple[str, int, dict[tuple[str, str], set[Decimal]]]:
    """(adapter name, products found, effective prices by (name, option))."""
    page = Page(url=f"https://corpus.invalid/{entry['id']}", text=_text(entry))
    adapter, extraction = extract_page(page)
    prices: dict[tuple[str, str], set[Decimal]] = defaultdict(set)
    for obs in extraction.observations:
        for offer in obs.offers:
            paid = offer.special_price if offer.special_price is not None else offer.price
            if paid is not None:
                prices[_key(obs.name, offer.option)].add(paid)
    return adapter.name, len(extraction.observations), prices


def _hits(entry: dict[str, Any], prices: dict[tuple[str, str], set[Decimal]]) -> int:
    items = entry["truth"]["items"]
    return sum(Decimal(item["price"]) in prices.get(_key(item["name"], item["option"]), ()) for item in items)


def test_the_manifest_lists_every_corpus_file_with_its_source_and_truth() -> None:
    listed = {entry["file"] for entry in MANIFEST}
    on_disk = {path.name for path in _files()}
    assert listed == on_disk
    for entry in MANIFEST:
        assert set(entry["source"]) == {"repo", "path", "commit", "licence"}
        assert entry["truth_rule"] and entry["truth"]["items"]
        assert entry["platform"] in ADAPTER_FOR


def test_no_corpus_file_is_a_private_evaluation_page() -> None:
    if HOLDOUT is None:
        pytest.skip("no shared/holdout-sha256.txt above this checkout")
    private = {line.strip() for line in HOLDOUT.read_text().splitlines() if line.strip() and not line.startswith("#")}
    ours = {path.name: hashlib.sha256(path.read_bytes()).hexdigest() for path in _files()}
    ours.update({f"{e['file']} (decompressed)": hashlib.sha256(_text(e).encode()).hexdigest() for e in MANIFEST})
    assert not {name for name, digest in ours.items() if digest in private}


@pytest.mark.parametrize("entry", MANIFEST, ids=[entry["id"] for entry in MANIFEST])
def test_each_payload_is_detected_by_content_and_its_products_found(entry: dict[str, Any]) -> None:
    adapter, products, prices = _found(entry)
    assert adapter == ADAPTER_FOR[entry["platform"]]
    assert products == entry["truth"]["products"]
    items = entry["truth"]["items"]
    assert Decimal(_hits(entry, prices)) / len(items) >= THRESHOLD


def test_accuracy_per_platform(capsys: pytest.CaptureFixture[str]) -> None:
    totals: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0])
    for entry in MANIFEST:
        _, products, prices = _found(entry)
        row = totals[entry["platform"]]
        row[0] += products
        row[1] += entry["truth"]["products"]
        row[2] += _hits(entry, prices)
        row[3] += len(entry["truth"]["items"])
    with capsys.disabled():
        print()
        for platform, (products, want, hits, items) in sorted(totals.items()):
            print(f"{platform:14} products {products}/{want}  items at effective price {hits}/{items}"
                  f"  ({100 * hits / items:.1f}%)")
    assert all(Decimal(hits) / items >= THRESHOLD for _, _, hits, items in totals.values())
