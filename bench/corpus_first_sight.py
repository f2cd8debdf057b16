"""Record how the extractor scores each new corpus entry the first time it sees it.

    .venv/bin/python bench/corpus_first_sight.py

For every entry of tests/corpus/manifest.json (product pages) and
tests/corpus/dispensary/manifest.json (menu payloads) whose `first_sight` is
`"pending"` (committed so, unseen by any test or bench), or that is not yet committed
(not in HEAD's manifest) and has none, scores it with the extraction code of the
checked-out commit and writes the result into the entry. Entries committed without one
(those added before the rule) and recorded ones are never touched:

- a page: `{"commit": sha, "price": bool, "availability": bool}` (a field only when the
  truth can score it, as in tests/corpus_scoring.judge);
- a menu payload: `{"commit": sha, "adapter": name, "items_right": n, "items": m}`.

Run it when an entry is added, before any change is made for that entry; it refuses to
run while the extraction code differs from the commit it would record.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

import corpus_files  # noqa: E402
import corpus_scoring as cs  # noqa: E402
import menu_scoring as ms  # noqa: E402

#: the code a page's extraction runs through
EXTRACTION_CODE = ("workers", "domain")


def base_commit() -> str:
    """HEAD's sha, once the extraction code has no uncommitted change."""
    dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--",
                            *EXTRACTION_CODE], capture_output=True, text=True, check=True).stdout
    if dirty.strip():
        raise SystemExit("the extraction code has uncommitted changes; commit or stash them first")
    return subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True,
                          text=True, check=True).stdout.strip()


def page_first_sight(entry: dict[str, Any], commit: str) -> dict[str, Any]:
    _, verdicts = cs.score(cs.ours, [entry])
    verdict = verdicts[entry["id"]]
    return {"commit": commit, **cs.first_sight_record(verdict)}


def menu_first_sight(entry: dict[str, Any], commit: str) -> dict[str, Any]:
    try:
        adapter, _, prices = ms.found(entry)
    except Exception:  # noqa: BLE001 - a crash scores as "found nothing"
        adapter, prices = None, {}
    return {"commit": commit, "adapter": adapter, "items_right": ms.hits(entry, prices),
            "items": len(entry["truth"]["items"])}


def committed_ids(path: Path) -> set[str]:
    shown = subprocess.run(["git", "-C", str(ROOT), "show", f"HEAD:{path.relative_to(ROOT)}"],
                           capture_output=True, text=True, check=True).stdout
    return {entry["id"] for entry in json.loads(shown)}


def record(name: str, first_sight: Any, commit: str, indent: int) -> int:
    """Records the first sight of manifest `name`'s new entries; how many there were."""
    path = corpus_files.MANIFESTS / name
    entries = json.loads(path.read_text(encoding="utf-8"))
    new = corpus_files.awaiting_first_sight(entries, committed_ids(path))
    missing = corpus_files.presence(new, name).missing
    if missing:  # scoring absent bytes would record a miss the extractor never made
        raise SystemExit(f"no bytes for {', '.join(e['id'] for e in missing)}: "
                         "put them in .corpus-cache/ first (bench/corpus_cache.py)")
    for entry in new:
        entry["first_sight"] = first_sight(entry, commit)
    if new:
        path.write_text(json.dumps(entries, indent=indent, ensure_ascii=False) + "\n", encoding="utf-8")
    return len(new)


def main() -> None:
    commit = base_commit()
    pages = record("manifest.json", page_first_sight, commit, indent=1)
    menus = record(ms.MENUS, menu_first_sight, commit, indent=2)
    print(f"first sight recorded at {commit[:7]}: {pages} pages, {menus} menu payloads")


if __name__ == "__main__":
    main()
