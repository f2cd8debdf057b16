"""A mistyped LEDGER_DATA_DIR is an error, not an empty ledger."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

CLI = str(Path(sys.executable).with_name("crawl-ledger"))



def run(data: Path, *args: str, **extra: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "LEDGER_STORE"}
    env.update(LEDGER_DATA_DIR=str(data), **extra)
    return subprocess.run([CLI, *args], env=env, capture_output=True, text=True, timeout=120)


def test_reading_commands_refuse_a_data_dir_that_holds_no_ledger(tmp_path: Path) -> None:
    missing = tmp_path / "ledgr"
    for args in (("jobs", "list"), ("products", "list"), ("stores", "list"),
                 ("events", "tail"), ("audit", "verify")):
        result = run(missing, *args)
        assert result.returncode == 2, (args, result.stdout, result.stderr)
        assert result.stderr.count("\n") == 1 and f"LEDGER_DATA_DIR={missing}" in result.stderr
        assert not missing.exists(), args  # nothing was created


def test_adding_a_store_starts_a_ledger_that_reads_then_work(tmp_path: Path) -> None:
    data = tmp_path / "new"
    added = run(data, "stores", "add", "Shop", "https://shop.example", "--platform", "shopify")
    assert added.returncode == 0, added.stderr
    listed = run(data, "stores", "list")
    assert listed.returncode == 0 and "Shop" in listed.stdout


def test_a_sqlite_store_url_that_does_not_exist_is_named(tmp_path: Path) -> None:
    store = tmp_path / "nowhere" / "ledger.sqlite"
    result = run(tmp_path / "data", "jobs", "list", LEDGER_STORE=f"sqlite:///{store}")
    assert result.returncode == 2 and f"LEDGER_STORE names {store}" in result.stderr
