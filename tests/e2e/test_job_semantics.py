"""Job semantics an operator relies on, on both backends: a cancelled, completed or dead
job reopens (scheduling the same kind and URL again, `jobs reopen`, the API) with its
origin recorded; a recurring job outlives non-retryable failures until three in a row."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import httpx
from test_api import T0, bearer, serving
from test_command_origins import cli, last_event

from domain.errors import InvalidInput
from domain.retry import NON_RETRYABLE_LIMIT
from domain.values import CrawlFailure
from ledger.bootstrap import Ledger
from runtime.commands import Origin, ScheduleJob

URL = "https://shop.example/products.json"
HTML_FOR_JSON = CrawlFailure("parse_error", "expected JSON, got text/html", False)


def test_scheduling_a_cancelled_job_again_reopens_it_with_the_new_settings(
        ledger: Ledger) -> None:
    origin = Origin("cli:ann@host", "cli", "the shop is back")
    first = ledger.commands.send(ScheduleJob("catalog", URL, origin, every=3600), T0)
    assert not first.reopened
    ledger.app.cancel(first.job_id, T0)
    again = ledger.commands.send(
        ScheduleJob("catalog", URL, origin, every=7200, priority=7), T0 + timedelta(hours=1))
    assert (again.job_id, again.reopened) == (first.job_id, True)
    kind, payload = last_event(ledger, str(first.job_id))
    assert kind == "CrawlJob.Reopened"
    assert (payload["actor"], payload["surface"], payload["reason"]) == (
        "cli:ann@host", "cli", "the shop is back")
    ledger.catch_up()
    row = ledger.read.job(str(first.job_id))
    assert (row["state"], row["interval_s"], row["priority"]) == ("scheduled", 7200, 7)
    task = ledger.app.lease(first.job_id, "w", 60, T0 + timedelta(hours=1))
    assert task.job_id == str(first.job_id) and task.attempt == 1


def test_scheduling_a_running_job_again_is_refused_and_changes_nothing(ledger: Ledger) -> None:
    origin = Origin("cli:ann@host", "cli", None)
    job = ledger.commands.send(ScheduleJob("catalog", URL, origin, every=3600), T0).job_id
    version = ledger.app.get_job(job).version
    try:
        ledger.commands.send(ScheduleJob("catalog", URL, origin, every=7200), T0)
    except InvalidInput as refused:
        assert str(refused) == f"a catalog job for {URL} already exists: {job} (scheduled)"
    else:
        raise AssertionError("scheduling a scheduled job again was accepted")
    assert ledger.app.get_job(job).version == version


def test_cli_schedule_says_reopened_and_jobs_reopen_runs_a_completed_job(
        ledger: Ledger, store_url: str, tmp_path: Path) -> None:
    data = tmp_path / "data"
    made = cli(store_url, data, "jobs", "schedule", "--kind", "catalog", "--url", URL,
               "--every", "1h")
    assert made.returncode == 0 and made.stdout.startswith("scheduled catalog job"), made
    job = made.stdout.split()[3]
    assert cli(store_url, data, "jobs", "cancel", job).returncode == 0
    again = cli(store_url, data, "jobs", "schedule", "--kind", "catalog", "--url", URL,
                "--every", "2h", "--reason", "back in stock")
    assert again.returncode == 0, again.stderr
    assert again.stdout.strip() == f"reopened catalog job {job} (2h)"
    assert last_event(ledger, job)[1]["reason"] == "back in stock"
    once = ledger.app.schedule_job(kind="feed", url="https://shop.example/rss", now=T0)
    lease_id = ledger.app.lease(once, "w", 60, T0).lease_id
    ledger.app.record_failure(once, lease_id, HTML_FOR_JSON, T0)
    assert ledger.app.get_job(once).state == "dead"  # one-shot: today's behaviour
    reopened = cli(store_url, data, "jobs", "reopen", str(once), "--reason", "fixed")
    assert reopened.returncode == 0, reopened.stderr
    assert reopened.stdout.strip() == f"job {once}: reopen recorded, now scheduled"
    refused = cli(store_url, data, "jobs", "reopen", str(once))
    assert refused.returncode != 0 and "cannot reopen job" in refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1


def test_api_reopens_over_schedule_and_control_with_the_token_as_actor(ledger: Ledger) -> None:
    job = str(ledger.app.schedule_job(kind="catalog", url=URL, now=T0, every=3600))
    ledger.app.cancel(job, T0)
    with serving(ledger) as (base, secrets), httpx.Client(base_url=base) as http:
        body = {"kind": "catalog", "url": URL, "every_seconds": 7200}
        read = http.post("/api/v1/jobs", json=body, headers=bearer(secrets["read"]))
        assert read.status_code == 403
        done = http.post("/api/v1/jobs", json=body, headers=bearer(secrets["operate"]),
                         params={"reason": "api: back"})
        assert done.status_code == 200, done.text
        assert done.json() == {"id": job, "reopened": True}
        assert last_event(ledger, job)[1]["actor"] == "token:operate (operate)"
        http.post(f"/api/v1/jobs/{job}/cancel", headers=bearer(secrets["operate"]))
        control = http.post(f"/api/v1/jobs/{job}/reopen", headers=bearer(secrets["operate"]))
        assert control.status_code == 200 and control.json()["state"] == "scheduled"
        twice = http.post(f"/api/v1/jobs/{job}/reopen", headers=bearer(secrets["operate"]))
        assert twice.status_code == 409, twice.text


def test_recurring_job_survives_two_parse_errors_and_dies_of_the_third(
        ledger: Ledger, store_url: str, tmp_path: Path) -> None:
    job = ledger.app.schedule_job(kind="catalog", url=URL, now=T0, every=3600)
    now = T0
    for n in range(1, NON_RETRYABLE_LIMIT + 1):
        lease_id = ledger.app.lease(job, "w", 60, now).lease_id
        ledger.app.record_failure(job, lease_id, HTML_FOR_JSON, now)
        ledger.catch_up()
        row = ledger.read.job(str(job))
        if n < NON_RETRYABLE_LIMIT:
            assert row["state"] == "scheduled", row
            assert f"({n} of {NON_RETRYABLE_LIMIT} in a row" in row["last_error"]
            assert row["next_run_at"].startswith(f"{now + timedelta(hours=1):%Y-%m-%dT%H:%M:%S}")
            shown = cli(store_url, tmp_path / "data", "jobs", "show", str(job))
            assert f"non-retryable failures in a row: {n} of 3" in shown.stdout, shown
            now += timedelta(hours=1)
    assert row["state"] == "dead"
    assert row["last_error"] == "3 non-retryable failures in a row, the last parse_error: " \
                                "expected JSON, got text/html"
    with serving(ledger) as (base, secrets), httpx.Client(base_url=base) as http:
        shown_api = http.get(f"/api/v1/jobs/{job}", headers=bearer(secrets["read"])).json()
    assert shown_api["nonretryable_failures"] == NON_RETRYABLE_LIMIT


def test_reopening_under_another_store_is_refused_and_changes_nothing(ledger: Ledger) -> None:
    store = ledger.app.register_store(name="Shop", base_url="https://shop.example",
                                      platform="shopify", now=T0)
    origin = Origin("cli:ann@host", "cli", None)
    job = ledger.commands.send(ScheduleJob("catalog", URL, origin, every=3600), T0).job_id
    ledger.app.cancel(job, T0)
    version = ledger.app.get_job(job).version
    try:
        ledger.commands.send(ScheduleJob("catalog", URL, origin, store_id=store, every=3600), T0)
    except InvalidInput as refused:
        assert str(refused).endswith(f"(cancelled) for store none, not {store}")
    else:
        raise AssertionError("reopening under another store was accepted")
    assert ledger.app.get_job(job).version == version
    assert ledger.app.get_job(job).state == "cancelled"
