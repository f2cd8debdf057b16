"""`crawl-ledger schedule distribution|rebalance` and `jobs schedule --spread` as an
operator runs them, and the same over the HTTP API with its scopes."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
from backends import LOOPBACK_ENV
from test_api import bearer, serving

from ledger.bootstrap import Ledger, bootstrap
from ledger.settings import Settings


def crowded(ledger: Ledger, count: int = 24) -> None:
    now = datetime.now(UTC)
    for i in range(count):
        ledger.app.schedule_job(kind="catalog", url=f"https://s{i}.example/c", now=now,
                                every=4 * 3600, start_at=now + timedelta(minutes=20))


def test_schedule_commands(tmp_path: Path, crawl_ledger_bin: str,
                           cli_env: Callable[..., dict[str, str]]) -> None:
    ledger = bootstrap(Settings.from_env({**LOOPBACK_ENV, "LEDGER_DATA_DIR": str(tmp_path)}))
    crowded(ledger)
    head = ledger.source.head()
    ledger.close()

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([crawl_ledger_bin, *args], env=cli_env(tmp_path),
                              capture_output=True, text=True, timeout=60)

    shown = json.loads(run("schedule", "distribution", "--json").stdout)
    assert sum(shown["counts"]) == 24 * 6 and shown["score"] == 16.0
    preview = json.loads(run("schedule", "rebalance", "--preview", "--json").stdout)
    assert not preview["applied"] and preview["moves"]
    assert preview["score_after"] < preview["score_before"] == 16.0
    applied = run("schedule", "rebalance", "--apply")
    assert applied.returncode == 0, applied.stderr
    assert f"spread score 16.0 before, {preview['score_after']} after" in applied.stdout
    after = json.loads(run("schedule", "distribution", "--json").stdout)
    assert after["score"] == preview["score_after"]
    bad = run("schedule", "distribution", "--slot", "5s")
    assert bad.returncode == 2 and bad.stderr.strip().splitlines() == [
        "crawl-ledger: error: --slot must be 1m..1d, not 5s"]
    spread = run("jobs", "schedule", "--kind", "store_discovery", "--url",
                 "https://example.com/stores.json", "--every", "4h", "--spread")
    assert spread.returncode == 0 and "first run" in spread.stdout, spread.stderr
    ledger = bootstrap(Settings.from_env({**LOOPBACK_ENV, "LEDGER_DATA_DIR": str(tmp_path)}))
    try:
        moved = [e for e in ledger.source.read(head, 10_000)
                 if e.event_type == "CrawlJob.Rescheduled"]
        assert len(moved) == len(preview["moves"])
    finally:
        ledger.close()


def test_schedule_over_the_api(ledger: Ledger) -> None:
    crowded(ledger)
    with serving(ledger) as (url, secrets), httpx.Client(base_url=url) as http:
        shown = http.get("/api/v1/schedule/distribution", headers=bearer(secrets["read"]))
        assert shown.status_code == 200 and shown.json()["score"] == 16.0
        refused = http.post("/api/v1/schedule/rebalance", json={"apply": True},
                            headers=bearer(secrets["read"]))
        assert refused.status_code == 403
        bad = http.get("/api/v1/schedule/distribution?slot_seconds=7200&hours=1",
                       headers=bearer(secrets["read"]))
        assert bad.status_code == 422
        done = http.post("/api/v1/schedule/rebalance", json={"apply": True},
                         headers=bearer(secrets["operate"])).json()
        assert done["applied"] and done["moves"] and done["score_after"] < 16.0
        placed = http.post("/api/v1/jobs", headers=bearer(secrets["operate"]), json={
            "kind": "store_discovery", "url": "https://example.com/s.json",
            "every_seconds": 3600, "spread": True})
        assert placed.status_code == 201
