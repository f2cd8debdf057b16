"""The extractor on real pages nobody here wrote (manifest in tests/corpus, bytes outside
the repository, see corpus_files): the corpus is what its manifest says and holds none of
the private evaluation pages; accuracy per slice is printed beside the naive extruct +
price-parser baseline, and must stay ahead of it and above the floor reached so far."""

from __future__ import annotations

import gzip
import hashlib
import re
from decimal import Decimal
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import corpus_files
import corpus_scoring as cs
import pytest
from babel.numbers import list_currencies

#: the private evaluation set's digests, in a `shared/` directory beside some ancestor
HOLDOUT = next((p / "shared" / "holdout-sha256.txt" for p in Path(__file__).resolve().parents
                if (p / "shared" / "holdout-sha256.txt").exists()), None)
AVAILABILITY = {None, "in_stock", "out_of_stock", "preorder", "backorder", "discontinued"}
#: accuracy reached so far on the pages added before first sights were recorded (the pages
#: the extractor was tuned on); a change that loses ground fails. Pages with a `first_sight`
#: must keep at least as many right answers as the extractor gave when each was added.
FLOOR = {"price_currency": 0.97, "availability": 0.96}


def holdout() -> set[str]:
    if HOLDOUT is None:
        pytest.skip("no shared/holdout-sha256.txt above this checkout")
    lines = HOLDOUT.read_text().split()
    return {line.lower() for line in lines if re.fullmatch(r"[0-9a-fA-F]{64}", line)}


def corpus_byte_files() -> list[Path]:
    """Every file the corpus tests may read: each manifest entry's present bytes, and all
    of the local cache (which may hold entries not yet in a manifest)."""
    located = [corpus_files.locate(corpus_files.relative(entry, name))
               for name in corpus_files.MANIFEST_FOLDERS for entry in corpus_files.manifest(name)]
    cached = [p for p in corpus_files.CACHE.rglob("*") if p.is_file()]
    return sorted({p for p in located if p is not None} | set(cached))


def first_sight_and_now(entries: list[dict[str, Any]], verdicts: dict[str, dict[str, bool]]
                        ) -> dict[str, tuple[int, int]]:
    """field -> (right at first sight, right now) over the entries that record one."""
    counts: dict[str, tuple[int, int]] = {}
    for entry in filter(corpus_files.has_first_sight, entries):
        was = cs.first_sight(entry)
        for field, right in verdicts[entry["id"]].items():
            first, now = counts.get(field, (0, 0))
            counts[field] = (first + was[field], now + right)
    return counts


def tuned_rates(entries: list[dict[str, Any]], verdicts: dict[str, dict[str, bool]]
                ) -> dict[str, cs.Tally]:
    """field -> right answers over the entries without a first sight (the tuned pages)."""
    tallies: dict[str, cs.Tally] = {field: cs.Tally() for field in FLOOR}
    for entry in (e for e in entries if "first_sight" not in e):
        for field, right in verdicts[entry["id"]].items():
            tallies[field].scored += 1
            tallies[field].right += right
    return tallies


def test_no_corpus_file_is_a_private_evaluation_page() -> None:
    private = holdout()
    assert private, "the holdout list is empty"
    corpus_files.present_or_skip(cs.entries())
    files = corpus_byte_files()
    for path in files:
        data = path.read_bytes()
        forms = [data] + ([gzip.decompress(data)] if path.suffix == ".gz" else [])
        for form in forms:
            assert hashlib.sha256(form).hexdigest() not in private, f"{path} is a holdout page"


def test_bytes_are_the_ones_the_manifests_record() -> None:
    """Entries that record a `sha256` (of the decompressed bytes) are read as recorded: a stale
    or mistaken copy in either root fails here rather than scoring as a miss."""
    checked = 0
    for name in corpus_files.MANIFEST_FOLDERS:
        for entry in corpus_files.manifest(name):
            path = corpus_files.relative(entry, name)
            if "sha256" in entry and corpus_files.locate(path) is not None:
                assert hashlib.sha256(corpus_files.content(path)).hexdigest() == entry["sha256"], path
                checked += 1
    if not checked:
        pytest.skip("no bytes here of an entry that records its sha256")


def test_the_repository_keeps_no_corpus_bytes() -> None:
    """Only manifests, truth corrections and the README live in tests/corpus."""
    kept = {p.relative_to(corpus_files.MANIFESTS).as_posix()
            for p in corpus_files.MANIFESTS.rglob("*") if p.is_file()}
    allowed = {*corpus_files.MANIFEST_FOLDERS, "peb-overrides.json", "README.md"}
    assert kept <= allowed, sorted(kept - allowed)


def test_enough_entries_have_bytes(capsys: pytest.CaptureFixture[str]) -> None:
    found = corpus_files.presence(cs.entries())
    without = ", ".join(e["id"] for e in found.missing[:10])
    with capsys.disabled():
        print(f"\n{found.line()}" + (f" (first: {without})" if without else ""))
    corpus_files.present_or_skip(cs.entries())


def test_manifest_entries_are_complete_and_checkable() -> None:
    currencies = set(list_currencies())
    entries = cs.entries()
    assert len({e["id"] for e in entries}) == len(entries)
    for entry in entries:
        assert entry["file"].startswith("pages/") and ".." not in entry["file"], entry["id"]
        source = entry["source"]
        assert source["repo"].count("/") == 1 and source["path"] and source["licence"]
        assert re.fullmatch(r"[0-9a-f]{40}", source["commit"]), entry["id"]
        assert re.fullmatch(r"[0-9a-f]{64}", entry.get("sha256", "0" * 64)), entry["id"]
        truth = entry["truth"]
        for price in truth["price"] or []:
            assert Decimal(price) > 0, entry["id"]
        assert truth["currency"] is None or truth["currency"] in currencies, entry["id"]
        assert truth["availability"] in AVAILABILITY, entry["id"]
        assert urlsplit(entry["url"]).scheme in ("http", "https")


def test_the_corpus_is_broad() -> None:
    entries = cs.entries()
    shops = {e["shop"] for e in entries}
    currencies = {e["truth"]["currency"] for e in entries} - {None}
    assert len(entries) >= 140 and len(shops) >= 60 and len(currencies) >= 8, (
        len(entries), len(shops), sorted(currencies))


def test_extraction_beats_the_baseline_on_every_slice(capsys: pytest.CaptureFixture[str]) -> None:
    entries = corpus_files.present_or_skip(cs.entries())
    ours, verdicts = cs.score(cs.ours, entries)
    baseline, _ = cs.score(cs.baseline, entries)
    with capsys.disabled():
        print("\n" + "\n".join(cs.table({"ours": ours, "baseline": baseline})))
    for field, tally in tuned_rates(entries, verdicts).items():
        assert tally.rate >= FLOOR[field], (field, tally)
    for field, (first, now) in first_sight_and_now(entries, verdicts).items():
        assert now >= first, (field, first, now)
    for name, fields in ours.items():
        for field, tally in fields.items():
            assert tally.right >= baseline[name][field].right, (name, field)
