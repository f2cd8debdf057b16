"""The CLI in-process: stores, jobs and their control, events tail, and refusals
that exit non-zero with one line on stderr and record nothing."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from backends import open_ledger

from domain.crawl_job import RetryPolicy
from domain.values import CrawlFailure
from ledger.cli import main

ENVELOPE_FIELDS = ["event_id", "position", "stream_id", "stream_type", "version", "event_type",
                   "schema_version", "occurred_at", "recorded_at", "payload"]


class Cli:
    def __init__(self, capsys: pytest.CaptureFixture[str]) -> None:
        self.capsys = capsys

    def run(self, *argv: str) -> tuple[int, str, str]:
        self.capsys.readouterr()
        try:
            code = main(list(argv))
        except SystemExit as exited:  # argparse's refusals
            code = int(exited.code or 0)
        out, err = self.capsys.readouterr()
        return code, out, err

    def json(self, *argv: str) -> Any:
        code, out, err = self.run(*argv, "--json")
        assert code == 0, err
        return json.loads(out)

    def events(self, *argv: str) -> list[dict[str, Any]]:
        code, out, err = self.run("events", "tail", "--json", *argv)
        assert code == 0 and err == ""
        return [json.loads(line) for line in out.splitlines()]

    def refused(self, *argv: str, reason: str) -> str:
        before = len(self.events())
        code, _out, err = self.run(*argv)
        assert code != 0
        assert len(err.strip().splitlines()) == 1 and reason in err, err
        assert len(self.events()) == before
        return err


@pytest.fixture
def cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> Cli:
    monkeypatch.setenv("LEDGER_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.delenv("LEDGER_STORE", raising=False)
    return Cli(capsys)


@pytest.fixture
def store(cli: Cli) -> str:
    return str(cli.json("stores", "add", "Green Leaf", "https://greenleaf.example",
                        "--platform", "dispensary", "--crawl-delay", "2")["id"])


@pytest.fixture
def job(cli: Cli, store: str) -> str:
    return str(cli.json("jobs", "schedule", store, "--kind", "catalog",
                        "--url", "https://greenleaf.example/menu", "--every", "2h")["id"])


def test_stores_add_and_list(cli: Cli, store: str) -> None:
    stores = cli.json("stores", "list")
    assert isinstance(stores, list) and [s["id"] for s in stores] == [store]
    assert (stores[0]["name"], stores[0]["platform"], stores[0]["crawl_delay"]) == (
        "Green Leaf", "dispensary", 2.0)


def test_jobs_schedule_list_show(cli: Cli, store: str, job: str) -> None:
    jobs = cli.json("jobs", "list", "--state", "scheduled")
    assert [(j["id"], j["state"], j["interval_s"], j["store_id"]) for j in jobs] == [
        (job, "scheduled", 7200, store)]
    assert cli.json("jobs", "list", "--state", "paused") == []
    shown = cli.json("jobs", "show", job)
    assert shown["id"] == job and shown["status"]["state"] == "scheduled"
    assert [e["event_type"] for e in shown["events"]] == ["CrawlJob.Scheduled"]
    code, out, _ = cli.run("jobs", "show", job)
    assert code == 0 and job in out and "Scheduled" in out


def test_operator_controls(cli: Cli, job: str) -> None:
    for action, state in [("pause", "paused"), ("resume", "scheduled"),
                          ("force-run", "scheduled"), ("cancel", "cancelled")]:
        code, out, err = cli.run("jobs", action, job)
        assert (code, err) == (0, "")
        assert f"now {state}" in out
    history = [e["event_type"].split(".")[1] for e in cli.json("jobs", "show", job)["events"]]
    assert history == ["Scheduled", "Paused", "Resumed", "ForceRunRequested", "Cancelled"]
    assert [j["id"] for j in cli.json("jobs", "list", "--state", "cancelled")] == [job]


def test_retry_of_a_dead_job(cli: Cli, tmp_path: Path) -> None:
    job = cli.json("jobs", "schedule", "--kind", "feed", "--url", "https://f.example/rss",
                   "--once", "--max-attempts", "1")["id"]
    now = datetime.now(UTC)
    url = f"sqlite:///{(tmp_path / 'data' / 'ledger.sqlite').resolve()}"
    with open_ledger(url, tmp_path) as ledger:  # a worker fails the only attempt
        assert ledger.app.get_job(job).policy == RetryPolicy(max_attempts=1)
        lease_id = ledger.app.lease(job, "w", 60, now).lease_id
        ledger.app.record_failure(job, lease_id, CrawlFailure("http_4xx", "410 Gone", False), now)
    assert cli.json("jobs", "show", job)["status"]["state"] == "dead"
    cli.refused("jobs", "pause", job, reason="it is dead")
    code, out, _ = cli.run("jobs", "retry", job)
    assert code == 0 and "now scheduled" in out
    assert cli.json("jobs", "show", job)["events"][-1]["event_type"] == "CrawlJob.RetryRequested"


def test_refusals_exit_non_zero_with_one_line_and_record_nothing(
        cli: Cli, store: str, job: str) -> None:
    unknown = "00000000-0000-0000-0000-000000000000"
    cli.refused("jobs", "pause", unknown, reason=f"unknown job id {unknown}")
    cli.refused("jobs", "show", "nope", reason="unknown job id")
    cli.refused("jobs", "resume", job, reason="cannot resume job")
    cli.refused("jobs", "retry", store, reason="unknown job id")
    cli.refused("stores", "add", "X", "ftp://x", "--platform", "shopify",
                reason="scheme must be http or https")
    cli.refused("stores", "add", "Again", "https://greenleaf.example/", "--platform", "shopify",
                reason="already registered")
    cli.refused("jobs", "schedule", store, "--kind", "catalog", "--url", "https://g.example/x",
                "--every", "4x", reason="bad duration '4x'")
    cli.refused("jobs", "schedule", unknown, "--kind", "catalog", "--url", "https://g.example/x",
                reason="unknown store id")
    cli.refused("jobs", "schedule", store, "--kind", "catalog",
                "--url", "https://greenleaf.example/menu", reason="already exists")
    cli.refused("events", "tail", "--after", "-1", reason="argument --after: '-1' must be an")
    cli.refused("stores", "add", "Y", "https://y.example", "--platform", "shopify",
                "--crawl-delay", "nan", reason="argument --crawl-delay: 'nan' must be a number")


def test_events_tail_prints_envelopes_in_order(cli: Cli, store: str, job: str) -> None:
    cli.run("jobs", "pause", job)
    events = cli.events()
    assert [list(e) for e in events] == [ENVELOPE_FIELDS] * len(events)
    assert [e["event_type"] for e in events] == [
        "Store.Registered", "Store.PolicyChanged", "CrawlJob.Scheduled", "CrawlJob.Paused"]
    assert [e["position"] for e in events] == [1, 2, 3, 4]
    assert events[2]["stream_id"] == job and events[2]["payload"]["store_id"] == store
    assert events[2]["event_id"] == f"{job}:1" and events[3]["version"] == 2
    assert all(e["occurred_at"].endswith("Z") and e["schema_version"] == 1 for e in events)
    assert [e["position"] for e in cli.events("--after", "2")] == [3, 4]
    assert cli.events("--after", "4") == []
    assert [e["position"] for e in cli.events("--after", "1", "--limit", "2")] == [2, 3]


def test_bad_config_exits_non_zero_naming_the_variable_and_creates_nothing(
        cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LEDGER_STORE", "mysql://x")
    for argv in (["stores", "list"], ["events", "tail"],
                 ["stores", "add", "S", "https://s.example", "--platform", "shopify"]):
        code, out, err = cli.run(*argv)
        assert code != 0 and out == ""
        assert "LEDGER_STORE" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "data").exists()
    assert list(tmp_path.iterdir()) == []
