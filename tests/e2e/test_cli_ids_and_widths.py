"""The CLI at ordinary terminal widths, and ids as people type them: a unique prefix
(the 8 characters the tables show) and a store's name when no other store has it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from domain import ids
from domain.urls import normalize_url as normalize

CLI = str(Path(sys.executable).with_name("crawl-ledger"))


@pytest.fixture
def data(tmp_path: Path) -> Path:
    return tmp_path / "data"


def run(data: Path, *args: str, columns: int = 80) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "LEDGER_STORE"}
    env.update(LEDGER_DATA_DIR=str(data), COLUMNS=str(columns))
    return subprocess.run([CLI, *args], env=env, capture_output=True, text=True, timeout=120)


def add_store(data: Path, name: str, url: str) -> str:
    added = run(data, "stores", "add", name, url, "--platform", "shopify", "--json")
    assert added.returncode == 0, added.stderr
    return str(json.loads(added.stdout)["id"])


def schedule(data: Path, store: str, url: str) -> str:
    done = run(data, "jobs", "schedule", store, "--kind", "catalog", "--url", url, "--json")
    assert done.returncode == 0, done.stderr
    return str(json.loads(done.stdout)["id"])


def test_jobs_and_stores_list_fit_80_columns_one_line_a_row(data: Path) -> None:
    store = add_store(data, "A store with a rather long name indeed",
                      "https://a-very-long-host-name-for-a-shop.example")
    jobs = [schedule(data, store, f"https://a-very-long-host-name-for-a-shop.example/"
                                  f"collections/all/products/item-{i}-with-a-long-slug.json")
            for i in range(3)]
    for args in (("jobs", "list"), ("stores", "list")):
        listed = run(data, *args)
        assert listed.returncode == 0, listed.stderr
        lines = listed.stdout.splitlines()
        assert all(len(line) <= 80 for line in lines), lines
        rows = [line for line in lines if line[:8] in {j[:8] for j in jobs} | {store[:8]}]
        assert len(rows) == (3 if args[0] == "jobs" else 1), lines
    wide = run(data, "jobs", "list", "--wide", columns=200)
    assert all(job in wide.stdout for job in jobs)


def test_an_id_prefix_is_taken_where_an_id_is(data: Path) -> None:
    store = add_store(data, "Shop", "https://shop.example")
    job = schedule(data, store[:8], "https://shop.example/products.json")
    shown = run(data, "jobs", "show", job[:8])
    assert shown.returncode == 0 and job in shown.stdout
    paused = run(data, "jobs", "pause", job[:6])
    assert paused.returncode == 0 and "now paused" in paused.stdout
    unknown = run(data, "jobs", "show", "ffffffff")
    assert unknown.returncode == 2 and "unknown job id 'ffffffff'" in unknown.stderr


def test_an_ambiguous_prefix_is_refused_not_guessed(data: Path) -> None:
    store = add_store(data, "Shop", "https://shop.example")
    by_prefix: dict[str, str] = {}
    for i in range(5000):  # two URLs whose job ids share their first 4 characters
        url = f"https://shop.example/{i}.json"
        prefix = str(ids.job_id("catalog", normalize(url)))[:4]
        if prefix in by_prefix:
            pair = (by_prefix[prefix], url)
            break
        by_prefix[prefix] = url
    jobs = [schedule(data, store, url) for url in pair]
    assert jobs[0][:4] == jobs[1][:4]
    refused = run(data, "jobs", "show", jobs[0][:4])
    assert refused.returncode == 2 and "ambiguous" in refused.stderr
    assert run(data, "jobs", "show", jobs[0][:12]).returncode == 0
    too_short = run(data, "jobs", "show", jobs[0][:3])
    assert too_short.returncode == 2 and "at least its first 4 characters" in too_short.stderr


def test_store_filters_take_a_unique_name_and_refuse_others(data: Path) -> None:
    leaf = add_store(data, "Blue Leaf", "https://blueleaf.example")
    schedule(data, "Blue Leaf", "https://blueleaf.example/products.json")
    listed = run(data, "jobs", "list", "--store", "Blue Leaf", "--json")
    assert listed.returncode == 0 and [j["store_id"] for j in json.loads(listed.stdout)] == [leaf]
    unknown = run(data, "products", "list", "--store", "Blue Leaf 3")
    assert unknown.returncode == 2 and "unknown store id or name 'Blue Leaf 3'" in unknown.stderr
    add_store(data, "Blue Leaf", "https://blueleaf2.example")
    twice = run(data, "products", "list", "--store", "Blue Leaf")
    assert twice.returncode == 2 and "2 stores are named 'Blue Leaf'" in twice.stderr
