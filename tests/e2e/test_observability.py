"""Observability as an operator meets it: `crawl-ledger run --metrics-port` exposes the
job step's Prometheus metrics while it runs, every log line on stderr is one JSON
object, and the lines written while a job runs carry its job, store, lease and worker
ids; a bad log setting is one line and exit 2."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
from test_bot import seeded

from ledger.bootstrap import bootstrap
from ledger.settings import Settings


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def sample(metrics: str, name: str) -> float:
    """The sum of every sample of `name` (all label values) in Prometheus text."""
    return sum(float(line.rsplit(" ", 1)[1]) for line in metrics.splitlines()
               if line.startswith(name) and not line.startswith("#")
               and line[len(name)] in "{ ")


def test_run_exposes_metrics_and_logs_json_lines_with_ids(
        shop: str, tmp_path: Path, crawl_ledger_bin: str,
        cli_env: Callable[..., dict[str, str]], wait_for: Callable[..., Any]) -> None:
    seeded(tmp_path / "data", shop).close()
    port = free_port()
    proc = subprocess.Popen([crawl_ledger_bin, "run", "--metrics-port", str(port)],
                            env=cli_env(tmp_path / "data", LEDGER_LOG_FORMAT="json"),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        def scraped() -> str | None:
            try:
                text = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=5).text
            except httpx.TransportError:
                return None
            return text if sample(text, 'crawl_ledger_results_recorded_total') >= 2 else None

        metrics = wait_for(scraped, "two results counted on /metrics", timeout=60)
    finally:
        proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 0, stderr
    assert sample(metrics, "crawl_ledger_leases_total") >= 2
    assert sample(metrics, "crawl_ledger_fetch_seconds_count") >= 2
    assert 'crawl_ledger_results_recorded_total{outcome="ok"} 2.0' in metrics

    lines = [json.loads(line) for line in stderr.splitlines() if line.strip()]
    crawled = [line for line in lines if line["event"] == "crawled"]
    ledger = bootstrap(Settings.from_env({"LEDGER_DATA_DIR": str(tmp_path / "data")}))
    try:
        jobs = {str(row["job_id"]): row for row in ledger.read.jobs()}
    finally:
        ledger.close()
    assert {line["job_id"] for line in crawled} == set(jobs)
    for line in crawled:
        assert line["level"] == "info" and line["logger"] == "runtime.work"
        assert line["store_id"] == str(jobs[line["job_id"]]["store_id"])
        assert line["lease_id"] and line["worker"] and line["outcome"] == "ok"
        assert line["url"].startswith(shop) and line["products"] == 1


def test_a_bad_log_setting_is_one_line(tmp_path: Path, crawl_ledger_bin: str,
                                       cli_env: Callable[..., dict[str, str]]) -> None:
    done = subprocess.run([crawl_ledger_bin, "stores", "list"], capture_output=True, text=True,
                          env=cli_env(tmp_path / "data", LEDGER_LOG_FORMAT="xml"), timeout=60)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "crawl-ledger: error: LEDGER_LOG_FORMAT must be one of json, console, not 'xml'"]
    assert not (tmp_path / "data").exists()  # nothing was opened, nothing written


def test_readyz_reports_an_unreachable_broker(tmp_path: Path, crawl_ledger_bin: str,
                                              cli_env: Callable[..., dict[str, str]],
                                              wait_for: Callable[..., Any]) -> None:
    port, broker = free_port(), free_port()  # nothing listens on `broker`
    server = subprocess.Popen([crawl_ledger_bin, "serve", "--port", str(port)],
                              env=cli_env(tmp_path / "data",
                                          LEDGER_BROKER=f"kafka://127.0.0.1:{broker}"),
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        def ready() -> httpx.Response | None:
            try:
                return httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=10)
            except httpx.TransportError:
                return None

        answer = wait_for(ready, "serve answering", timeout=60)
        metrics = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=10).text
    finally:
        server.terminate()
        server.communicate(timeout=30)
    assert answer.status_code == 503
    assert answer.json()["detail"].startswith(f"broker unreachable: 127.0.0.1:{broker}")
    assert "crawl_ledger_relay_lag_events 0.0" in metrics  # nothing recorded, nothing relayed
