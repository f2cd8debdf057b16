"""Real dispensary menu payloads (tests/corpus/dispensary) read by `extract_page`.

Each payload's truth in manifest.json was read off the payload by hand (its
`truth_rule` says how); the adapters must find at least 95 % of the truth items
(matched by product name and option) at their effective price, i.e. what the
customer pays: the special price when there is one, else the price.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from decimal import Decimal
from pathlib import Path
from typing import Any

import menu_scoring as ms
import pytest

MANIFEST = ms.manifest()
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
    return [path for folder in (ms.DISPENSARY, ms.CACHE) if folder.is_dir() for path in folder.iterdir()
            if path.name != "manifest.json"]


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
    ours.update({f"{e['file']} (decompressed)": hashlib.sha256(ms.text(e).encode()).hexdigest() for e in MANIFEST})
    assert not {name for name, digest in ours.items() if digest in private}


@pytest.mark.parametrize("entry", MANIFEST, ids=[entry["id"] for entry in MANIFEST])
def test_each_payload_is_detected_by_content_and_its_products_found(entry: dict[str, Any]) -> None:
    adapter, products, prices = ms.found(entry)
    assert adapter == ADAPTER_FOR[entry["platform"]]
    assert products == entry["truth"]["products"]
    items = entry["truth"]["items"]
    assert Decimal(ms.hits(entry, prices)) / len(items) >= THRESHOLD


def test_accuracy_per_platform(capsys: pytest.CaptureFixture[str]) -> None:
    totals: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0])
    for entry in MANIFEST:
        _, products, prices = ms.found(entry)
        row = totals[entry["platform"]]
        row[0] += products
        row[1] += entry["truth"]["products"]
        row[2] += ms.hits(entry, prices)
        row[3] += len(entry["truth"]["items"])
    with capsys.disabled():
        print()
        for platform, (products, want, hits, items) in sorted(totals.items()):
            print(f"{platform:14} products {products}/{want}  items at effective price {hits}/{items}"
                  f"  ({100 * hits / items:.1f}%)")
    assert all(Decimal(hits) / items >= THRESHOLD for _, _, hits, items in totals.values())
