"""`serve` as a new user meets it: its banner names the dashboard and the access log, its
log lines carry no terminal colour codes, every request gets an access-log line without
query values or credentials (and logrotate can move the file), and `demo` refuses to
delete a directory it serves."""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
from test_api import free_port

from ledger.drivers.demo import MARKER


def test_serve_names_the_dashboard_logs_access_and_demo_leaves_its_dir_alone(
        tmp_path: Path, crawl_ledger_bin: str, cli_env: Callable[..., dict[str, str]],
        wait_for: Callable[..., Any]) -> None:
    demo_dir = tmp_path / "data" / "demo"
    demo_dir.mkdir(parents=True)
    (demo_dir / MARKER).write_text("a demo's dir\n")
    port = free_port()
    server = subprocess.Popen([crawl_ledger_bin, "serve", "--port", str(port)],
                              env=cli_env(demo_dir), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                health = httpx.get(f"http://127.0.0.1:{port}/healthz")
                break
            except httpx.ConnectError:
                assert server.poll() is None and time.monotonic() < deadline
                time.sleep(0.1)
        assert health.status_code == 200
        assert httpx.get(f"http://127.0.0.1:{port}/login").status_code == 200
        refused = httpx.get(f"http://127.0.0.1:{port}/api/v1/jobs?limit=1&token=s3cr3t-query",
                            headers={"Authorization": "Bearer s3cr3t-bearer"})
        assert refused.status_code == 401
        access = demo_dir / "access.log"
        # a request's line is written once its response has gone out
        lines = wait_for(lambda: _lines(access, 3), "three access-log lines", 30)
        assert [(x["method"], x["path"], x["status"]) for x in lines] == [
            ("GET", "/healthz", 200), ("GET", "/login", 200), ("GET", "/api/v1/jobs", 401)]
        assert lines[2]["query_keys"] == ["limit", "token"] and lines[1]["bytes"] > 0
        assert "s3cr3t" not in access.read_text()
        access.rename(tmp_path / "access.log.1")  # as logrotate moves it
        assert httpx.get(f"http://127.0.0.1:{port}/healthz").status_code == 200
        assert [x["path"] for x in wait_for(lambda: _lines(access, 1), "a new file", 30)] == \
            ["/healthz"]
        demo = subprocess.run([crawl_ledger_bin, "demo", "--stores", "1", "--cycles", "1"],
                              env=cli_env(tmp_path / "data"), capture_output=True, text=True,
                              timeout=120)
        assert demo.returncode == 2, demo.stdout + demo.stderr
        assert "in use by another crawl-ledger process" in demo.stderr
        assert len(demo.stderr.strip().splitlines()) == 1
        assert (demo_dir / "ledger.sqlite").exists()  # nothing deleted under the server
    finally:
        server.terminate()
        out, err = server.communicate(timeout=30)
    assert f"the dashboard at http://127.0.0.1:{port}/" in out
    assert f"access log: {demo_dir / 'access.log'}" in out
    assert "\x1b[" not in err  # not a terminal: JSON lines, no colour codes
    assert all(json.loads(line) for line in err.splitlines() if line.startswith("{"))


def _lines(path: Path, count: int) -> list[dict[str, Any]] | None:
    """The access log's lines once it holds `count` of them."""
    text = path.read_text() if path.exists() else ""
    lines = [json.loads(line) for line in text.splitlines()]
    return lines if len(lines) >= count else None
