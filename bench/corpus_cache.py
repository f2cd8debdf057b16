"""Fill `.corpus-cache/` with corpus bytes taken from git mirrors of their sources.

    .venv/bin/python bench/corpus_cache.py [--mirrors /work/.mirror] [--all] [--dry-run]

For every entry of tests/corpus/manifest.json and tests/corpus/dispensary/manifest.json
whose bytes no corpus root holds (all entries with `--all`), reads
`git show <commit>:<path>` of the entry's `source` from the mirror
`<mirrors>/<owner>+<name>/` (a bare git directory, or a clone's `.git`, anywhere below
it) and writes it to `.corpus-cache/<file>`, gzipped when the manifest's file name ends
in `.gz` and the source's bytes are not gzip already. A blob whose digest (raw or
gunzipped) is on the private evaluation list (`../shared/holdout-sha256.txt`) is never
written, nor one whose decompressed bytes differ from the `sha256` the entry records
(reported as `sha256-differs`). Entries derived from their source rather than copied (an
excerpt, a split file: their `truth_rule` says so) are written as the source's bytes and
reported as `derived`; their bytes come from the shared corpus, not from here.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

import corpus_files  # noqa: E402

GZIP_MAGIC = b"\x1f\x8b"
HOLDOUT = corpus_files.PROJECT.parent / "shared" / "holdout-sha256.txt"


def git_dir(mirrors: Path, repo: str) -> Path | None:
    """The git directory of `repo`'s mirror: the first folder below it with HEAD and objects."""
    base = mirrors / repo.replace("/", "+")
    candidates = [base, *sorted(p.parent for p in base.rglob("HEAD"))] if base.is_dir() else []
    return next((c for c in candidates if (c / "HEAD").is_file() and (c / "objects").is_dir()),
                None)


def blob(git: Path, commit: str, path: str) -> bytes | None:
    shown = subprocess.run(["git", "--git-dir", str(git), "show", f"{commit}:{path}"],
                           capture_output=True, check=False)
    return shown.stdout if shown.returncode == 0 else None


def private_digests() -> set[str]:
    if not HOLDOUT.is_file():
        return set()
    return {line.strip().lower() for line in HOLDOUT.read_text().splitlines()
            if len(line.strip()) == 64}


def plain(data: bytes) -> bytes:
    """The bytes decompressed when they are gzip (what an entry's `sha256` is of)."""
    if data.startswith(GZIP_MAGIC):
        try:
            return gzip.decompress(data)
        except (OSError, EOFError):
            pass
    return data


def digests(data: bytes) -> set[str]:
    return {hashlib.sha256(form).hexdigest() for form in (data, plain(data))}


def stored_form(data: bytes, file_name: str) -> bytes:
    """The bytes as the manifest names them: gzipped when the name ends in .gz, else plain."""
    if not file_name.endswith(".gz"):
        return plain(data)
    return data if data.startswith(GZIP_MAGIC) else gzip.compress(data, mtime=0)


def is_copy(entry: dict[str, Any]) -> bool:
    """Whether the entry's bytes are its source's bytes (not an excerpt or a split)."""
    rule = str(entry.get("truth_rule", "")).casefold()
    return not any(word in rule for word in ("keeps the hits", "object literal", "excerpt"))


def cache_one(entry: dict[str, Any], manifest_name: str, mirrors: Path, private: set[str],
              dry_run: bool) -> str:
    """What happened to this entry: written, derived, no-mirror, no-blob, private,
    sha256-differs."""
    source = entry["source"]
    git = git_dir(mirrors, source["repo"])
    if git is None:
        return "no-mirror"
    data = blob(git, source["commit"], source["path"])
    if data is None:
        return "no-blob"
    if digests(data) & private:
        return "private"
    if "sha256" in entry and hashlib.sha256(plain(data)).hexdigest() != entry["sha256"]:
        return "sha256-differs"
    target = corpus_files.CACHE / corpus_files.relative(entry, manifest_name)
    if not dry_run:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(stored_form(data, entry["file"]))
    return "written" if is_copy(entry) else "derived"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mirrors", type=Path, default=Path("/work/.mirror"))
    parser.add_argument("--all", action="store_true", help="also entries already present")
    parser.add_argument("--dry-run", action="store_true", help="report, write nothing")
    args = parser.parse_args()
    private, outcomes = private_digests(), Counter[str]()
    for name in corpus_files.MANIFEST_FOLDERS:
        entries = corpus_files.manifest(name)
        wanted = entries if args.all else corpus_files.presence(entries, name).missing
        for entry in wanted:
            outcome = cache_one(entry, name, args.mirrors, private, args.dry_run)
            outcomes[outcome] += 1
            if outcome != "written":
                print(f"{entry['id']}: {outcome} ({entry['source']['repo']})")
    print(", ".join(f"{n} {k}" for k, n in sorted(outcomes.items())) or "nothing to fetch",
          f"-> {corpus_files.CACHE}")


if __name__ == "__main__":
    main()
