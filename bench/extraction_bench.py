"""Extraction on the real-page corpus: ours beside the naive baseline, in one run.

    .venv/bin/python bench/extraction_bench.py [--rounds 3]

For each extractor — crawl-ledger's (`workers.extraction.extract.extract_page`, as a crawl
runs it) and a naive extruct + price-parser script — prints accuracy per slice of
the corpus (manifest tests/corpus; bytes from `$LEDGER_CORPUS_DIR`, else ../shared/corpus,
then .corpus-cache: see tests/corpus_files.py) (price + currency, availability) and pages per second (median of
`--rounds` timed passes over every page, after one warm-up pass; the passes
alternate between the two), then the ratios. Then, for the entries that record a
`first_sight` (pages and menu payloads added since the rule; tests/corpus/README.md),
how the extractor scored them when each was added beside how it scores them now.
Entries whose first sight is still pending are counted, never scored. Last,
the generic menu reader alone (platform adapters switched off) on every menu payload of
tests/corpus/dispensary: the share of the truth's options it finds at their effective
price, and how far it agrees with the platform adapters; then the same leave one platform
out, with what only that platform's field names say hidden from the reader (every word
of a key no other platform's key holds, then every key no other platform uses: see
`menu_scoring.blinded_names`): the figure that predicts a platform nobody here has met.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

import corpus_files  # noqa: E402
import corpus_scoring as cs  # noqa: E402
import menu_scoring as ms  # noqa: E402


def pages_per_second(extractors: dict[str, cs.Extractor], pages: list[tuple[bytes, str]],
                     rounds: int) -> dict[str, float]:
    """Each extractor's pages/s, the median of `rounds` timed passes over every page.
    The passes alternate between the extractors (ours, baseline, baseline, ours, …): the
    host's speed moves within minutes, and a ratio of passes timed far apart moved with
    it (0.22× to 0.42× between invocations)."""
    for extract in extractors.values():
        for body, url in pages:  # warm-up: imports, caches (CLDR symbols)
            extract(body, url)
    rates: dict[str, list[float]] = {name: [] for name in extractors}
    names = list(extractors)
    for round_ in range(rounds):
        for name in names if round_ % 2 == 0 else reversed(names):
            extract = extractors[name]
            started = time.perf_counter()
            for body, url in pages:
                try:
                    extract(body, url)
                except Exception:  # noqa: BLE001, S110 - a crash counts as a page done
                    pass
            rates[name].append(len(pages) / (time.perf_counter() - started))
    return {name: statistics.median(found) for name, found in rates.items()}


def first_sight_lines(entries: list[dict[str, Any]]) -> list[str]:
    """Per slice of the pages that record a first sight: right at first sight, right now."""
    seen = list(filter(corpus_files.has_first_sight, entries))
    _, now = cs.score(cs.ours, seen)
    rows: dict[str, dict[str, list[int]]] = defaultdict(lambda: defaultdict(lambda: [0, 0, 0]))
    for entry in seen:
        first = cs.first_sight(entry)
        for field, right in now[entry["id"]].items():
            was = first[field]
            for name in ("all", *entry.get("slices", [])):
                row = rows[name][field]
                row[0], row[1], row[2] = row[0] + was, row[1] + right, row[2] + 1
    head = f"{'slice':<22}{'price first':>18}{'price now':>18}{'avail first':>18}{'avail now':>18}"
    lines = [f"first sight: {len(seen)} pages of {len({e['shop'] for e in seen})} shops", head,
             "-" * len(head)]
    for name in sorted(rows, key=lambda s: (s != "all", s)):
        cells = []
        for field in ("price_currency", "availability"):
            then, now_right, scored = rows[name].get(field, [0, 0, 0])
            cells += ([f"{then / scored:>9.1%} {then:>3}/{scored:<4}",
                       f"{now_right / scored:>9.1%} {now_right:>3}/{scored:<4}"] if scored
                      else [f"{'-':>18}"] * 2)
        lines.append(f"{name:<22}" + "".join(cells))
    return lines


def without_url_lines(entries: list[dict[str, Any]]) -> list[str]:
    """The maintainers' way (`extract FILE --json`, no URL; `corpus_scoring.ours_without_url`)
    on the corpus and on the first-sight pages; then the visible ranking alone
    (structured data ignored) on every page with a price truth."""
    seen = [entry for entry in entries if "first_sight" in entry]
    lines = ["without URL (as `crawl-ledger extract FILE --json`; effective price = the "
             "special when lower):"]
    for label, chosen in (("corpus", entries), ("first-sight pages", seen)):
        tallies = cs.score(cs.ours_without_url, chosen)[0]["all"] if chosen else {}
        cells = [f"{field} {tallies[field].rate:6.1%} {tallies[field].right}/{tallies[field].scored}"
                 for field in ("price_currency", "availability") if field in tallies]
        lines.append(f"  {label:<18} " + "   ".join(cells or ["-"]))
    alone = cs.score(cs.visible_alone, entries)[0]["all"]["price_currency"]
    lines.append(f"  {'visible alone':<18} price_currency {alone.rate:6.1%} {alone.right}/"
                 f"{alone.scored} (structured data ignored: the ranking a page without it gets)")
    return lines


def menu_first_sight_lines() -> list[str]:
    """Per platform of the menu payloads that record a first sight: options right then, now."""
    rows: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0])
    seen = list(filter(corpus_files.has_first_sight, ms.manifest()))
    for entry in corpus_files.presence(seen, ms.MENUS).present:
        _, _, prices = ms.found(entry)
        row = rows[entry["platform"]]
        row[0] += 1
        row[1] += entry["first_sight"]["items_right"]
        row[2] += ms.hits(entry, prices)
        row[3] += len(entry["truth"]["items"])
    lines = [f"first sight: {sum(r[0] for r in rows.values())} menu payloads"]
    for platform, (payloads, first, right, items) in sorted(rows.items()):
        lines.append(f"{platform:<14} {payloads:>3} payloads  options right at first sight "
                     f"{first / items:6.1%} ({first}/{items})  now {right / items:6.1%}")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    found = corpus_files.presence(cs.entries())
    print(found.line())
    if not found.present:
        raise SystemExit("no corpus bytes here: set LEDGER_CORPUS_DIR (see tests/corpus/README.md)")
    entries = found.scorable
    pages = [(cs.body(e), e["url"]) for e in entries]
    named: dict[str, cs.Extractor] = {"ours": cs.ours, "baseline": cs.baseline}
    scores = {name: cs.score(extract, entries)[0] for name, extract in named.items()}
    speed = pages_per_second(named, pages, args.rounds)
    shops = len({e["shop"] for e in entries})
    print(f"\n{len(entries)} real pages of {shops} shops (corpus)\n")
    print("\n".join(cs.table(scores)))
    print()
    for field in ("price_currency", "availability"):
        ours, base = scores["ours"]["all"][field], scores["baseline"]["all"][field]
        print(f"{field:<16} ours {ours.rate:6.1%}   baseline {base.rate:6.1%}   "
              f"(+{(ours.rate - base.rate) * 100:.1f} points)")
    print(f"{'pages/s':<16} ours {speed['ours']:6.1f}   baseline {speed['baseline']:6.1f}   "
          f"(ratio {speed['ours'] / speed['baseline']:.2f}x)")
    print("\n" + "\n".join(without_url_lines(entries)))
    print("\n" + "\n".join(first_sight_lines(entries) + [""] + menu_first_sight_lines()))


def menu_section() -> None:
    """The generic menu reader, adapters off, on the dispensary payloads; then its
    agreement with the adapters, option by option."""
    from workers.extraction.adapters.base import Page
    from workers.extraction.extract import extract_page, menu_cross_check

    found = corpus_files.presence(ms.manifest(), ms.MENUS)
    print(f"\nmenu payloads: {found.line()}")
    if not found.scorable:
        return
    rows = ms.generic_alone(found.scorable)
    print(f"{'payload':<16}{'platform':<14}{'products':>10}{'options':>14}{'as written':>12}"
          f"  cross-check with the adapter")
    for row, entry in zip(rows, found.scorable, strict=True):
        page = Page(url=f"https://corpus.invalid/{entry['id']}", text=ms.text(entry))
        checked = menu_cross_check(page, extract_page(page)[1])
        print(f"{row.entry_id:<16}{row.platform:<14}{row.products:>5}/{row.truth_products:<4}"
              f"{row.same_weights:>8}/{row.items:<5}{row.strict:>6}/{row.items:<5}  "
              f"{checked.line() if checked else '-'}")
    strict, same_weights = ms.total(rows)
    print(f"generic menu reader, adapters off: {same_weights:.1%} of options "
          f"({strict:.1%} with option labels compared as written)")
    for by, what in (("words", "each word of a key that only its platform's keys hold"),
                     ("keys", "each key only its platform uses")):
        print(f"\nleave one platform out, adapters off, {what} hidden from the reader:")
        blind = ms.leave_one_platform_out(found.present, by)
        for platform in sorted({row.platform for row in blind}):
            mine = [row for row in blind if row.platform == platform]
            print(f"  {platform:<14}{len(mine):>3} payloads  {ms.total(mine)[1]:6.1%} of "
                  f"{sum(row.items for row in mine)} options")
        means = [ms.total([row for row in blind if row.platform == p])[1]
                 for p in {row.platform for row in blind}]
        print(f"  all platforms: {ms.total(blind)[1]:.1%} of options, "
              f"{statistics.mean(means):.1%} the mean of the platforms")


if __name__ == "__main__":
    main()
    menu_section()
