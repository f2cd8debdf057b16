"""Re-create the corpus bytes kept out of git (`.corpus-cache/`) from their sources.

    .venv/bin/python bench/corpus_cache.py [--mirrors /work/.mirror]

Every entry of tests/corpus/manifest.json and tests/corpus/dispensary/manifest.json
names the public repository, commit and path its bytes come from. For each entry whose
file is in neither the repository nor the cache, this takes `git show <commit>:<path>`
from the repository's git mirror (`<mirrors>/<owner>+<name>/repo`, as the fetch tool
lays them out), gzips it when the entry's file ends in `.gz` and the source does not,
checks it against the entry's `sha256` (of the decompressed bytes) and writes it to
`.corpus-cache/<file>` (`.corpus-cache/dispensary/<file>` for menu payloads).
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "corpus"
CACHE = ROOT / ".corpus-cache"


def source_bytes(mirrors: Path, source: dict[str, str]) -> bytes:
    repo = mirrors / source["repo"].replace("/", "+") / "repo"
    if not repo.is_dir():
        raise LookupError(f"no mirror of {source['repo']} at {repo}")
    shown = subprocess.run(["git", "-C", str(repo), "show", f"{source['commit']}:{source['path']}"],
                           capture_output=True, check=False)
    if shown.returncode:
        raise LookupError(shown.stderr.decode(errors="replace").strip().splitlines()[-1])
    return shown.stdout


def as_stored(data: bytes, entry: dict[str, Any]) -> tuple[bytes, bytes]:
    """(the bytes to write, the decompressed bytes) for the entry's file name."""
    gzipped = data[:2] == b"\x1f\x8b"
    plain = gzip.decompress(data) if gzipped else data
    if entry["file"].endswith(".gz"):
        return (data if gzipped else gzip.compress(plain, mtime=0)), plain
    return plain, plain


def restore(entry: dict[str, Any], home: Path, cache: Path, mirrors: Path) -> str | None:
    """Writes the entry's missing file; a one-line reason when it cannot."""
    if (home / entry["file"]).is_file() or (cache / entry["file"]).is_file():
        return None
    try:
        stored, plain = as_stored(source_bytes(mirrors, entry["source"]), entry)
    except LookupError as error:
        return f"{entry['id']}: {error}"
    if entry.get("sha256") and hashlib.sha256(plain).hexdigest() != entry["sha256"]:
        return f"{entry['id']}: the source's bytes are not the entry's (sha256 differs)"
    target = cache / entry["file"]
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(stored)
    return None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mirrors", type=Path, default=Path("/work/.mirror"))
    args = parser.parse_args()
    problems = []
    for home, cache in ((CORPUS, CACHE), (CORPUS / "dispensary", CACHE / "dispensary")):
        for entry in json.loads((home / "manifest.json").read_text(encoding="utf-8")):
            problem = restore(entry, home, cache, args.mirrors)
            if problem:
                problems.append(problem)
    print("\n".join(problems) or "every corpus file is in place")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
