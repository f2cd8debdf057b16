"""`crawl-ledger products search` and `GET /api/v1/products?q=` as a user runs them, on
both backends: ranked, prefix-matched results; bad text is one line and exit 2 (422 on
the API), never a crash."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path

import httpx
from backends import settings_for
from search_fixtures import seeded
from test_api import bearer, serving

from ledger.bootstrap import Ledger, bootstrap


def test_search_from_the_command_line(store_url: str, tmp_path: Path, crawl_ledger_bin: str,
                                      cli_env: Callable[..., dict[str, str]]) -> None:
    ledger = bootstrap(settings_for(store_url, tmp_path))
    try:
        seeded(ledger)
    finally:
        ledger.close()
    env = cli_env(tmp_path / "data", LEDGER_STORE=store_url)

    def search(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([crawl_ledger_bin, "products", "search", *args], env=env,
                              capture_output=True, text=True, timeout=60)

    found = search("blue dre", "--json")
    assert found.returncode == 0, found.stderr
    assert {p["name"] for p in json.loads(found.stdout)} == {"Blue Dream",
                                                              "Blue Dream Blue Dream"}
    table = search("kush")
    assert table.returncode == 0 and "Blueberry Kush" in table.stdout
    for bad in ('"*"', "x" * 201):
        refused = search(bad)
        assert refused.returncode == 2 and len(refused.stderr.strip().splitlines()) == 1
        assert "Traceback" not in refused.stderr
    assert search("kush", "--limit", "0").returncode == 2

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([crawl_ledger_bin, *args], env=env, capture_output=True,
                              text=True, timeout=120)

    verified = cli("projections", "rebuild", "--verify")
    assert verified.returncode == 0, verified.stdout + verified.stderr
    assert "product_search search index" in verified.stdout
    assert cli("projections", "rebuild").returncode == 0
    again = search("blue dre", "--json")
    assert again.returncode == 0 and json.loads(again.stdout) == json.loads(found.stdout)


def test_search_over_http(ledger: Ledger) -> None:
    seeded(ledger)
    with serving(ledger) as (url, tokens), httpx.Client(base_url=url) as http:
        read = bearer(tokens["read"])
        answer = http.get("/api/v1/products", params={"q": "dream"}, headers=read)
        assert answer.status_code == 200
        body = answer.json()
        assert body["items"][0]["name"] == "Blue Dream Blue Dream" and body["next_cursor"] is None
        assert {p["name"] for p in body["items"]} == {"Blue Dream", "Dream Queen",
                                                      "Blue Dream Blue Dream"}
        for params in ({"q": "*"}, {"q": "x" * 201}, {"q": "dream", "cursor": "a"}):
            refused = http.get("/api/v1/products", params=params, headers=read)
            assert refused.status_code == 422, params
            assert refused.headers["content-type"] == "application/problem+json"
        assert http.get("/api/v1/products", params={"q": "dream"}).status_code == 401
