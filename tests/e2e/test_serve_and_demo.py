"""`serve` as a new user meets it: its banner names the dashboard, its log lines carry
no terminal colour codes, and `demo` refuses to delete a directory it serves."""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import httpx
from test_api import free_port

from ledger.demo import MARKER


def test_serve_names_the_dashboard_logs_requests_and_demo_leaves_its_dir_alone(
        tmp_path: Path, crawl_ledger_bin: str, cli_env: Callable[..., dict[str, str]]) -> None:
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
    assert "\x1b[" not in err  # not a terminal: JSON lines, no colour codes
    assert all(json.loads(line) for line in err.splitlines() if line.startswith("{"))
