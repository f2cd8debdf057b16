"""A fleet that starts: processes started together on one PostgreSQL schema.

docker-compose starts about eight processes on one schema at once. Each creates the
event store's and the read models' tables; PostgreSQL's `CREATE … IF NOT EXISTS` is
not safe against a concurrent creator, so without the schema lock most of them failed
on a fresh schema (`UniqueViolation`) and some on an existing one.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from backends import store_url

CLI = str(Path(sys.executable).with_name("crawl-ledger"))

pytestmark = pytest.mark.postgres

PROCESSES = 8


def start_together(store: str, tmp_path: Path) -> list[subprocess.CompletedProcess[str]]:
    procs = []
    for i in range(PROCESSES):
        env = {**os.environ, "LEDGER_STORE": store, "LEDGER_DATA_DIR": str(tmp_path / f"d{i}")}
        procs.append(subprocess.Popen([CLI, "jobs", "list"], env=env, text=True,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE))
    results = []
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        results.append(subprocess.CompletedProcess(proc.args, proc.returncode, out, err))
    return results


def test_eight_processes_start_at_once_on_a_fresh_and_then_an_existing_schema(
        tmp_path: Path) -> None:
    with store_url("postgres", tmp_path) as store:
        for round_ in ("fresh", "existing"):
            results = start_together(store, tmp_path)
            failed = [r.stderr.strip().splitlines()[-1:] for r in results if r.returncode != 0]
            assert not failed, f"{round_} schema: {len(failed)} of {PROCESSES} failed: {failed}"
            assert all("jobs: none" in r.stdout for r in results)
