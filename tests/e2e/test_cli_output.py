"""What the CLI prints: no literal None, a menu's recreational and medical prices told
apart, and `events tail -n N` for the log's last N events."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path

from domain.values import CrawlSuccess, Observation, Offer
from ledger.bootstrap import Ledger

CLI = str(Path(sys.executable).with_name("crawl-ledger"))

T0 = datetime(2026, 3, 1, 8, 0, tzinfo=UTC)


def cli(store: str, tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "LEDGER_STORE": store, "LEDGER_DATA_DIR": str(tmp_path / "data"),
           "COLUMNS": "200"}
    return subprocess.run([CLI, *args], env=env, capture_output=True, text=True, timeout=120)


def seeded(ledger: Ledger) -> str:
    app = ledger.app
    store = app.register_store(name="Leaf", base_url="https://leaf.example", platform="dispensary",
                               now=T0)
    job = app.schedule_job(kind="catalog", url="https://leaf.example/menu", now=T0,
                           store_id=store)
    task = app.lease(job, "w", 300, T0)
    offers = (Offer("1g", Decimal("10.00"), "USD", pricing_type="recreational"),
              Offer("1g", Decimal("8.00"), "USD", pricing_type="medical"),
              Offer("3.5g", None, "USD"))
    app.record_success(job, task.lease_id, CrawlSuccess(
        200, task.url, "dutchie", "dutchie/1", "h1", observations=(
            Observation(provider_product_id="p1", name="Blue Dream", url=None, offers=offers),)),
        T0 + timedelta(minutes=1))
    ledger.catch_up()
    return str(ledger.read.products()[0]["product_id"])


def test_products_show_labels_pricing_types_and_prints_no_none(
        ledger: Ledger, store_url: str, tmp_path: Path) -> None:
    product = seeded(ledger)
    shown = cli(store_url, tmp_path, "products", "show", product[:8])
    assert shown.returncode == 0, shown.stderr
    assert "None" not in shown.stdout
    lines = [line.strip() for line in shown.stdout.splitlines()]
    assert "1g [recreational]: 10.00 USD" in lines and "1g [medical]: 8.00 USD" in lines
    assert "3.5g: no price" in lines
    tail = cli(store_url, tmp_path, "events", "tail")
    assert tail.returncode == 0 and "None" not in tail.stdout


def test_events_tail_last_n(ledger: Ledger, store_url: str, tmp_path: Path) -> None:
    seeded(ledger)
    every = [json.loads(x) for x in cli(store_url, tmp_path, "events", "tail", "--json")
             .stdout.splitlines()]
    assert len(every) > 3
    last = cli(store_url, tmp_path, "events", "tail", "-n", "3", "--json")
    assert last.returncode == 0, last.stderr
    assert [json.loads(x)["position"] for x in last.stdout.splitlines()] == \
        [e["position"] for e in every[-3:]]
    more = cli(store_url, tmp_path, "events", "tail", "-n", str(len(every) + 5), "--json")
    assert len(more.stdout.splitlines()) == len(every)
    both = cli(store_url, tmp_path, "events", "tail", "-n", "2", "--after", "1")
    assert both.returncode == 2 and "exclude each other" in both.stderr


def test_show_json_gives_each_event_its_position_and_the_as_of_state(
        ledger: Ledger, store_url: str, tmp_path: Path) -> None:
    product = seeded(ledger)
    log = {(e.stream_id, e.version): e.position for e in ledger.source.read(0, 1000)}
    job = str(ledger.read.jobs()[0]["job_id"])
    for kind, ident, state in (("jobs", job, "status"), ("products", product, "current")):
        shown = json.loads(cli(store_url, tmp_path, kind, "show", ident, "--json").stdout)
        assert [e["position"] for e in shown["events"]] == \
            [log[(ident, e["version"])] for e in shown["events"]]
        assert all(e["position"] > 0 for e in shown["events"])
        at = shown["events"][0]["recorded_at"]
        then = cli(store_url, tmp_path, kind, "show", ident, "--as-of", at, "--json")
        assert then.returncode == 0, then.stderr
        known = json.loads(then.stdout)
        assert known[state] is not None
        assert [e["version"] for e in known["events"]] == \
            [e["version"] for e in shown["events"] if e["recorded_at"] <= at]
    job_then = json.loads(cli(store_url, tmp_path, "jobs", "show", job, "--as-of",
                              ledger_start(ledger, job), "--json").stdout)
    assert job_then["status"]["state"] in {"scheduled", "leased"}
    assert job_then["status"]["next_run_at"].endswith("Z") and "T" in job_then["status"]["next_run_at"]


def ledger_start(ledger: Ledger, stream: str) -> str:
    return next(e.recorded_at for e in ledger.source.read(0, 1000) if e.stream_id == stream)
