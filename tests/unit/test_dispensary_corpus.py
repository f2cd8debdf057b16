"""Real dispensary menu payloads (manifest in tests/corpus/dispensary, bytes outside the
repository: see corpus_files) read by `extract_page`.

Each payload's truth in manifest.json was read off the payload by hand (its
`truth_rule` says how); the adapters must find at least 95 % of the truth items
(matched by product name and option) at their effective price, i.e. what the
customer pays: the special price when there is one, else the price. Payloads of a
platform no adapter knows (not in `ms.ADAPTER_FOR`) are read by the generic menu reader
and must keep at least the items it found at their first sight. Payloads whose first
sight is pending are not scored (see corpus_files).
"""

from __future__ import annotations

import hashlib
import re
from collections import defaultdict
from decimal import Decimal
from pathlib import Path
from typing import Any

import corpus_files
import menu_scoring as ms
import pytest

MENUS = ms.MENUS
MANIFEST = ms.manifest()
#: the payloads the tests may score (none pending its first sight)
SCORED = [entry for entry in MANIFEST if not corpus_files.pending(entry)]
#: The private evaluation set's digests, in a `shared/` directory beside some ancestor of this checkout.
_CANDIDATES = (parent / "shared" / "holdout-sha256.txt" for parent in Path(__file__).resolve().parents)
HOLDOUT = next((path for path in _CANDIDATES if path.exists()), None)
THRESHOLD = Decimal("0.95")

ADAPTER_FOR = ms.ADAPTER_FOR


def _present(entry: dict[str, Any]) -> dict[str, Any]:
    """The entry, when its bytes are here (else the test skips, or fails under CI)."""
    if entry not in corpus_files.present_or_skip(MANIFEST, MENUS):
        pytest.skip(f"no bytes for {entry['id']}")
    return entry


def test_each_manifest_entry_names_one_file_its_source_and_truth() -> None:
    files = [entry["file"] for entry in MANIFEST]
    assert len(set(files)) == len(files)
    for entry in MANIFEST:
        assert "/" not in entry["file"] and entry["file"].endswith((".json", ".json.gz")), entry["id"]
        assert set(entry["source"]) == {"repo", "path", "commit", "licence"}
        assert entry["truth_rule"] and entry["truth"]["items"]
        assert re.fullmatch(r"[a-z][a-z0-9_]*", entry["platform"]), entry["id"]
        assert corpus_files.pending(entry) or "first_sight" not in entry or corpus_files.has_first_sight(entry)


def test_no_corpus_file_is_a_private_evaluation_page() -> None:
    if HOLDOUT is None:
        pytest.skip("no shared/holdout-sha256.txt above this checkout")
    private = {line.strip() for line in HOLDOUT.read_text().splitlines() if line.strip() and not line.startswith("#")}
    present = corpus_files.present_or_skip(MANIFEST, MENUS)
    paths = [corpus_files.relative(entry, MENUS) for entry in present]
    ours = {path: hashlib.sha256(corpus_files.raw(path)).hexdigest() for path in paths}
    ours.update({f"{e['file']} (decompressed)": hashlib.sha256(ms.text(e).encode()).hexdigest() for e in present})
    assert not {name for name, digest in ours.items() if digest in private}


@pytest.mark.parametrize("entry", SCORED, ids=[entry["id"] for entry in SCORED])
def test_each_payload_is_detected_by_content_and_its_products_found(entry: dict[str, Any]) -> None:
    adapter, products, prices = ms.found(_present(entry))
    if entry["platform"] not in ADAPTER_FOR:  # the generic reader's: no worse than at first sight
        assert ms.hits(entry, prices) >= entry["first_sight"]["items_right"], adapter
        return
    assert adapter == ADAPTER_FOR[entry["platform"]]
    assert products == entry["truth"]["products"]
    items = entry["truth"]["items"]
    assert Decimal(ms.hits(entry, prices)) / len(items) >= THRESHOLD


def test_accuracy_per_platform(capsys: pytest.CaptureFixture[str]) -> None:
    totals: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0])
    for entry in corpus_files.present_or_skip(MANIFEST, MENUS):
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
    assert all(Decimal(hits) / items >= THRESHOLD for platform, (_, _, hits, items) in totals.items()
               if platform in ADAPTER_FOR)


#: the generic menu reader alone must find this share of the corpus's options
GENERIC_FLOOR = 0.95


def test_the_generic_reader_alone_finds_the_options(capsys: pytest.CaptureFixture[str]) -> None:
    """The floor is over the platforms with an adapter (the reader was built beside them);
    platforms without one are printed apart, as the figure for a platform not met before."""
    present = corpus_files.present_or_skip(MANIFEST, MENUS)
    rows = ms.generic_alone(present)
    known = [row for row in rows if row.platform in ADAPTER_FOR]
    unknown = [row for row in rows if row.platform not in ADAPTER_FOR]
    strict, same_weights = ms.total(known)
    with capsys.disabled():
        print(f"\ngeneric menu reader, adapters off: {same_weights:.1%} of options "
              f"({strict:.1%} with option labels compared as written)")
        if unknown:
            print(f"  on {len(unknown)} payloads of platforms without an adapter: "
                  f"{ms.total(unknown)[1]:.1%}")
    assert same_weights >= GENERIC_FLOOR
    # every product with a price; the truth also counts those listed with none (see ms.priced)
    with_a_price = [ms.priced(ms.extraction(entry)[1]) for entry in present]
    assert [row.products for row in rows] == with_a_price, rows
