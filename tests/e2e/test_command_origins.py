"""Every driver's operator command records who asked, through which surface, and why.

The same pause sent from the CLI, the HTTP API and the dashboard lands as the same
`CrawlJob.Paused` event, each with its own actor and surface; `jobs show` answers
"who paused this job?".
"""

from __future__ import annotations

import getpass
import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import httpx
from test_api import T0, bearer, serving

from api.auth import TokenStore
from ledger.bootstrap import Ledger

CLI = str(Path(sys.executable).with_name("crawl-ledger"))


def last_event(ledger: Ledger, stream_id: str) -> tuple[str, dict[str, object]]:
    last = [e for e in ledger.source.read(0, 100000) if e.stream_id == stream_id][-1]
    return last.event_type, dict(last.payload)


def cli(store: str, data: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "LEDGER_STORE": store, "LEDGER_DATA_DIR": str(data), "COLUMNS": "200"}
    return subprocess.run([CLI, *args], env=env, capture_output=True, text=True, timeout=120)


def test_a_pause_from_each_driver_records_its_actor_surface_and_reason(
        ledger: Ledger, store_url: str, tmp_path: Path) -> None:
    app = ledger.app
    store = app.register_store(name="Shop", base_url="https://shop.example", platform="shopify",
                               now=T0)
    jobs = [str(app.schedule_job(kind="catalog", url=f"https://shop.example/{n}.json", now=T0,
                                 store_id=store, every=3600)) for n in ("api", "dash", "cli")]
    ops_secret = TokenStore(ledger.tables.tokens).create("operate", "ops-api", T0)[0]
    with serving(ledger) as (url, _), httpx.Client(base_url=url) as http:
        paused = http.post(f"/api/v1/jobs/{jobs[0]}/pause", params={"reason": "api: shop asked"},
                           headers=bearer(ops_secret))
        assert paused.status_code == 200, paused.text
        secret = TokenStore(ledger.tables.tokens).create("operate", "ops-dash", T0)[0]
        assert http.post("/login", data={"token": secret, "next": "/"}).status_code == 303
        csrf = re.search(r'name="csrf" value="([^"]+)"', http.get(f"/jobs/{jobs[1]}").text)
        assert csrf is not None
        done = http.post(f"/jobs/{jobs[1]}/action", data={
            "csrf": csrf[1], "action": "pause", "reason": "dashboard: maintenance"})
        assert done.status_code == 303
    data = tmp_path / "data"
    result = cli(store_url, data, "jobs", "pause", jobs[2], "--reason", "cli: too fast")
    assert result.returncode == 0, result.stderr

    expected = [("token:ops-api (operate)", "api", "api: shop asked"),
                ("token:ops-dash (operate)", "dashboard", "dashboard: maintenance"),
                (f"cli:{getpass.getuser()}@{socket.gethostname()}", "cli", "cli: too fast")]
    for job_id, (actor, surface, reason) in zip(jobs, expected, strict=True):
        kind, payload = last_event(ledger, job_id)
        assert kind == "CrawlJob.Paused"
        assert (payload["actor"], payload["surface"], payload["reason"]) == (actor, surface, reason)


def test_jobs_show_says_who_paused_a_job_from_the_dashboard(
        ledger: Ledger, store_url: str, tmp_path: Path) -> None:
    app = ledger.app
    store = app.register_store(name="Shop", base_url="https://shop.example", platform="shopify",
                               now=T0)
    job = str(app.schedule_job(kind="catalog", url="https://shop.example/all.json", now=T0,
                               store_id=store, every=3600))
    secret, _ = TokenStore(ledger.tables.tokens).create("operate", "ops", T0)
    with serving(ledger) as (url, _), httpx.Client(base_url=url) as http:
        http.post("/login", data={"token": secret, "next": "/"})
        page = http.get(f"/jobs/{job}").text
        csrf = re.search(r'name="csrf" value="([^"]+)"', page)
        assert csrf is not None
        http.post(f"/jobs/{job}/action", data={"csrf": csrf[1], "action": "pause",
                                                "reason": "the shop is moving"})
        timeline = http.get(f"/jobs/{job}").text
        assert "by token:ops (operate) via dashboard" in timeline
    shown = cli(store_url, tmp_path / "data", "jobs", "show", job)
    assert shown.returncode == 0, shown.stderr
    line = next(x for x in shown.stdout.splitlines() if "Paused" in x)
    assert "by token:ops (operate) via dashboard" in line and "the shop is moving" in line


def test_a_store_disabled_over_the_api_records_its_actor(ledger: Ledger) -> None:
    store = str(ledger.app.register_store(name="Shop", base_url="https://shop.example",
                                          platform="shopify", now=T0))
    with serving(ledger) as (url, secrets), httpx.Client(base_url=url) as http:
        done = http.post(f"/api/v1/stores/{store}/disable", json={"reason": "asked us to stop"},
                         headers=bearer(secrets["operate"]))
        assert done.status_code == 200, done.text
    kind, payload = last_event(ledger, store)
    assert kind == "Store.Disabled"
    assert (payload["actor"], payload["surface"], payload["reason"]) == (
        "token:operate (operate)", "api", "asked us to stop")
