"""As an operator would run it: add a proxy with credentials, point a store at its
region, run the crawl: the page goes through the proxy (which counts it, and wants
the credentials), the shop sees it, and the password appears in no output and in
no event."""

from __future__ import annotations

import base64
import json
import subprocess
import threading
import urllib.request
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

PAGE = (b'<html><head><script type="application/ld+json">{"@type": "Product", "name": "Lamp",'
        b' "offers": {"price": "9.50", "priceCurrency": "EUR"}}</script></head></html>')
SECRET = "pr0xy-s3cret"
AUTH = "Basic " + base64.b64encode(f"crawler:{SECRET}".encode()).decode()


class Server(ThreadingHTTPServer):
    """The shop (serves /lamp and robots.txt) or, with `forward`, a forwarding proxy."""

    def __init__(self, forward: bool) -> None:
        self.paths: list[str] = []
        self.refused = 0
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (http.server's name)
                if forward and self.headers.get("Proxy-Authorization") != AUTH:
                    server.refused += 1
                    return self._answer(407, b"")
                server.paths.append(self.path)
                if forward:  # self.path is the absolute URI the client asked for
                    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
                    with opener.open(self.path, timeout=10) as response:
                        return self._answer(response.status, response.read())
                return self._answer(200, PAGE if self.path == "/lamp"
                                    else b"User-agent: *\nAllow: /\n")

            def _answer(self, status: int, body: bytes) -> None:
                self.send_response(status)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                return None

        super().__init__(("127.0.0.1", 0), Handler)

    @property
    def port(self) -> int:
        return int(self.server_address[1])


def _serve(forward: bool) -> Iterator[Server]:
    server = Server(forward)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server
    server.shutdown()
    server.server_close()


@pytest.fixture
def shop() -> Iterator[Server]:
    yield from _serve(False)


@pytest.fixture
def proxy() -> Iterator[Server]:
    yield from _serve(True)


def test_a_store_crawls_through_its_regions_proxy(
        shop: Server, proxy: Server, tmp_path: Path, crawl_ledger_bin: str,
        cli_env: Callable[..., dict[str, str]]) -> None:
    env = cli_env(tmp_path / "data", LEDGER_ALLOW_NETWORKS="127.0.0.1/32")
    printed: list[str] = []

    def cli(*argv: str, code: int = 0) -> str:
        result = subprocess.run([crawl_ledger_bin, *argv], env=env, capture_output=True,
                                text=True, timeout=120, stdin=subprocess.DEVNULL, check=False)
        assert result.returncode == code, result.stderr
        printed.extend((result.stdout, result.stderr))
        return result.stdout

    url_file = tmp_path / "proxy-url"
    url_file.write_text(f"http://crawler:{SECRET}@127.0.0.1:{proxy.port}\n")
    added = json.loads(cli("proxies", "add", "--url-file", str(url_file), "--region", "eu",
                           "--json"))
    assert added["address"] == f"http://127.0.0.1:{proxy.port}"
    cli("proxies", "add", f"http://crawler:{SECRET}@127.0.0.1:{proxy.port}", code=2)  # again
    base = f"http://127.0.0.1:{shop.port}"
    store = json.loads(cli("stores", "add", "Shop", base, "--platform", "generic", "--json"))
    cli("stores", "set-proxy", store["id"], "--region", "eu")
    job = json.loads(cli("jobs", "schedule", store["id"], "--kind", "product_page",
                         "--url", f"{base}/lamp", "--once", "--json"))
    cli("run", "--until-idle")

    shown = json.loads(cli("jobs", "show", job["id"], "--json"))
    assert shown["status"]["last_status"] == "succeeded", shown["status"]
    assert f"{base}/lamp" in proxy.paths and proxy.refused == 0
    assert "/lamp" in shop.paths
    [row] = json.loads(cli("proxies", "list", "--json"))
    assert (row["id"], row["region"], row["healthy"]) == (added["id"], "eu", True)
    assert row["successes"] >= 1 and row["failures"] == 0
    cli("proxies", "list")
    cli("proxies", "disable", added["id"], "--reason", "maintenance")
    [row] = json.loads(cli("proxies", "list", "--json"))
    assert not row["enabled"] and row["disabled_reason"] == "maintenance"
    cli("proxies", "enable", added["id"])
    log = cli("events", "tail", "--json")
    types = [json.loads(line)["event_type"] for line in log.splitlines()]
    assert {"Proxy.Added", "Proxy.Disabled", "Proxy.Enabled", "Store.EgressChanged"} <= set(types)
    by = {json.loads(line)["event_type"]: json.loads(line)["payload"] for line in log.splitlines()}
    assert by["Proxy.Disabled"]["actor"].startswith("cli:") and \
        by["Proxy.Disabled"]["surface"] == "cli" and by["Proxy.Enabled"]["surface"] == "cli"
    assert all(SECRET not in text and "crawler:" not in text for text in printed)


def test_bad_proxy_input_is_refused_and_records_nothing(
        tmp_path: Path, crawl_ledger_bin: str, cli_env: Callable[..., dict[str, str]]) -> None:
    env = cli_env(tmp_path / "data")
    env.pop("LEDGER_ALLOW_NETWORKS")

    def cli(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([crawl_ledger_bin, *argv], env=env, capture_output=True,
                              text=True, timeout=120, stdin=subprocess.DEVNULL, check=False)

    loopback = cli("proxies", "add", f"http://u:{SECRET}@127.0.0.1:3128")
    assert loopback.returncode != 0 and "refused" in loopback.stderr
    assert SECRET not in loopback.stderr + loopback.stdout
    assert cli("proxies", "add", "socks5://10.0.0.1:1080").returncode != 0
    assert json.loads(cli("proxies", "list", "--json").stdout) == []
