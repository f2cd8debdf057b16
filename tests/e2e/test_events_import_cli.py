"""A user moves the demo's ledger to a fresh data dir: `events export` -> `events import`."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

LISTS = (["products", "list", "--json"], ["jobs", "list", "--json"], ["stores", "list", "--json"])


def test_the_demo_exported_and_imported_lists_the_same_products_and_jobs(
        tmp_path: Path, crawl_ledger_bin: str, cli_env: Callable[..., dict[str, str]]) -> None:
    def run(data_dir: Path, *args: str, code: int = 0) -> subprocess.CompletedProcess[str]:
        done = subprocess.run([crawl_ledger_bin, *args], env=cli_env(data_dir), text=True,
                              capture_output=True, timeout=300, check=False)
        assert done.returncode == code, done.stderr
        return done

    run(tmp_path, "demo", "--stores", "2", "--cycles", "3")
    demo, fresh, log = tmp_path / "demo", tmp_path / "fresh", tmp_path / "demo.jsonl"
    exported = run(demo, "events", "export", "-o", str(log)).stderr
    chain = exported.split("audit chain hash at position ")[1].split(": ")[1].strip()
    imported = run(fresh, "events", "import", str(log), "--expect", chain).stdout
    assert imported.strip().endswith(chain)
    for args in LISTS:
        original = run(demo, *args).stdout
        assert original.startswith("[{") and run(fresh, *args).stdout == original
    assert run(fresh, "audit", "verify", "--expect", chain).stdout.startswith("verified:")
    again = run(fresh, "events", "import", str(log), code=2).stderr
    assert again.startswith("crawl-ledger: error: nothing imported: the event store")
