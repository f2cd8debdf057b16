"""As an operator would run it: without LEDGER_ALLOW_NETWORKS a job pointing at a
loopback server fails `blocked_address` (recorded, not retried) and the server sees
no request; with loopback allowed on purpose the same job succeeds. Both with the crawler
in a child process (`--crawl-process`, the default on more than one CPU) and in-process."""

from __future__ import annotations

import json
import subprocess
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

PAGE = (b'<html><head><script type="application/ld+json">{"@type": "Product", "name": "Lamp",'
        b' "offers": {"price": "9.50", "priceCurrency": "EUR"}}</script></head></html>')


class Shop(ThreadingHTTPServer):
    def __init__(self) -> None:
        self.paths: list[str] = []
        shop = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (http.server's name)
                shop.paths.append(self.path)
                body = PAGE if self.path == "/lamp" else b"User-agent: *\nAllow: /\n"
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                return None

        super().__init__(("127.0.0.1", 0), Handler)


@pytest.fixture
def shop() -> Iterator[Shop]:
    server = Shop()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


#: how `run` crawls: in a child process, or in its own
MODES = pytest.mark.parametrize("mode", ["--crawl-process", "--no-crawl-process"])


def job_after_run(bin_: str, env: dict[str, str], url: str, mode: str) -> dict[str, Any]:
    def cli(*argv: str) -> str:
        result = subprocess.run([bin_, *argv], env=env, capture_output=True, text=True,
                                timeout=120, stdin=subprocess.DEVNULL, check=False)
        assert result.returncode == 0, result.stderr
        return result.stdout

    store = json.loads(cli("stores", "add", "Shop", url.rsplit("/", 1)[0],
                           "--platform", "generic", "--json"))
    job = json.loads(cli("jobs", "schedule", store["id"], "--kind", "product_page",
                         "--url", url, "--once", "--json"))
    cli("run", "--until-idle", mode)
    shown: dict[str, Any] = json.loads(cli("jobs", "show", job["id"], "--json"))
    return shown


@MODES
def test_loopback_job_fails_blocked_address_without_an_allowlist(
        shop: Shop, tmp_path: Path, crawl_ledger_bin: str,
        cli_env: Callable[..., dict[str, str]], mode: str) -> None:
    env = cli_env(tmp_path / "data")
    env.pop("LEDGER_ALLOW_NETWORKS")
    url = f"http://127.0.0.1:{shop.server_address[1]}/lamp"
    shown = job_after_run(crawl_ledger_bin, env, url, mode)
    status = shown["status"]
    assert status["state"] == "dead" and status["last_error_kind"] == "blocked_address", status
    failed = [e for e in shown["events"] if e["event_type"] == "CrawlJob.Failed"]
    assert [f["payload"]["error_kind"] for f in failed] == ["blocked_address"], failed
    assert status["attempt"] == 1  # not retried: no retry can help
    assert shop.paths == []


@MODES
def test_the_same_job_succeeds_with_loopback_allowed(
        shop: Shop, tmp_path: Path, crawl_ledger_bin: str,
        cli_env: Callable[..., dict[str, str]], mode: str) -> None:
    env = cli_env(tmp_path / "data", LEDGER_ALLOW_NETWORKS="127.0.0.1/32")
    url = f"http://127.0.0.1:{shop.server_address[1]}/lamp"
    shown = job_after_run(crawl_ledger_bin, env, url, mode)
    assert shown["status"]["last_status"] == "succeeded", shown["status"]
    assert "/lamp" in shop.paths
