"""HTTP limits of `crawl-ledger serve`, attacked over real sockets on loopback.

One `serve` process (SQLite, short head and body timeouts) takes every attack: a huge
body without a token (refused before it is read; the server's RSS barely moves), a body
short of its Content-Length (timed out), a huge form to /login (413), made-up methods
(no new metrics series), slowloris heads (closed within the head timeout while fresh
requests are served), and a hypothesis fuzz of methods, paths, headers and bodies (no
500, metrics labels only from the fixed sets).
"""

from __future__ import annotations

import http.client
import os
import re
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TypeVar

import httpx
import pytest
from backends import LOOPBACK_ENV
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from api.auth import TokenStore
from ledger.bootstrap import bootstrap
from ledger.settings import Settings

CLI = str(Path(sys.executable).with_name("crawl-ledger"))
T0 = datetime(2026, 3, 1, 8, 0, tzinfo=UTC)
HEAD_TIMEOUT = 1.0
BODY_TIMEOUT = 1.0
MIB = 1 << 20
T = TypeVar("T")


@dataclass
class Server:
    port: int
    pid: int
    tokens: dict[str, str]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def rss(self) -> int:
        """The server process's resident memory, in bytes (/proc)."""
        status = Path(f"/proc/{self.pid}/status").read_text()
        return int(re.search(r"VmRSS:\s+(\d+) kB", status).group(1)) * 1024  # type: ignore[union-attr]

    def connect(self) -> socket.socket:
        return socket.create_connection(("127.0.0.1", self.port), timeout=10)

    def metrics(self) -> list[str]:
        return httpx.get(f"{self.url}/metrics", timeout=30).text.splitlines()


def wait_for(predicate: Callable[[], T], what: str, timeout: float) -> T:
    """Poll `predicate` until it returns something truthy; fail after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.05)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    data = tmp_path_factory.mktemp("httpsec")
    ledger = bootstrap(Settings.from_env({**LOOPBACK_ENV, "LEDGER_DATA_DIR": str(data)}))
    try:
        store = TokenStore(ledger.tables.tokens)
        tokens = {scope: store.create(scope, scope, T0)[0] for scope in ("read", "bot", "admin")}
    finally:
        ledger.close()
    env = {k: v for k, v in os.environ.items() if not k.startswith("LEDGER_")}
    env |= LOOPBACK_ENV | {"LEDGER_DATA_DIR": str(data), "NO_COLOR": "1"}
    port = free_port()
    proc = subprocess.Popen([CLI, "serve", "--port", str(port),
                             "--head-timeout", str(HEAD_TIMEOUT),
                             "--body-timeout", str(BODY_TIMEOUT)],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    served = Server(port, proc.pid, tokens)

    def up() -> bool:
        assert proc.poll() is None, proc.communicate()[1]
        try:
            return httpx.get(f"{served.url}/healthz", timeout=5).status_code == 200
        except httpx.TransportError:
            return False

    try:
        wait_for(up, "serve answering", 60)
        yield served
    finally:
        proc.terminate()
        try:
            proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:  # a connection it never let go of
            proc.kill()
            proc.communicate()


def head(method: str, path: str, length: int | None, token: str | None = None,
         content_type: str = "application/json") -> bytes:
    """A request head; without `length`, the body is chunked."""
    lines = [f"{method} {path} HTTP/1.1", "Host: 127.0.0.1", f"Content-Type: {content_type}"]
    lines.append(f"Content-Length: {length}" if length is not None
                 else "Transfer-Encoding: chunked")
    if token:
        lines.append(f"Authorization: Bearer {token}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def answer(sock: socket.socket) -> tuple[int, dict[str, str], bytes]:
    """The response on `sock` (status, lower-cased headers, body): within its timeout."""
    response = http.client.HTTPResponse(sock)
    response.begin()
    return (response.status, {k.lower(): v for k, v in response.getheaders()},
            response.read())


def closed(sock: socket.socket) -> bool:
    """True once the server closed `sock` (reads, within the socket's timeout)."""
    try:
        return sock.recv(65536) == b""
    except ConnectionResetError:
        return True


def push(sock: socket.socket, total: int, chunk: bytes) -> int:
    """Send up to `total` bytes of `chunk`s; how many went before the server shut the door."""
    sent = 0
    try:
        while sent < total:
            sock.sendall(chunk)
            sent += len(chunk)
    except OSError:  # the server closed the connection: broken pipe or reset
        pass
    return sent


# row 12 ----------------------------------------------------------------------------------

def test_a_huge_body_without_a_token_is_refused_before_it_is_read(server: Server) -> None:
    httpx.post(f"{server.url}/api/v1/bot/leases", json={"worker": "warm-up"})
    before = server.rss()
    with server.connect() as sock:
        sock.sendall(head("POST", "/api/v1/bot/leases", 400 * MIB))
        try:
            sock.sendall(b'{"worker": "' + b"w" * MIB)
        except (ConnectionResetError, BrokenPipeError):
            # refused and closed before the first MiB of the body was sent: nothing read
            sent = MIB
        else:
            status, headers, _ = answer(sock)
            assert status == 401 and headers["connection"] == "close"
            sent = push(sock, 400 * MIB, b"w" * MIB)
    assert sent < 100 * MIB, f"the server kept reading ({sent >> 20} MiB) after refusing"
    grown = server.rss() - before
    assert grown < 16 * MIB, f"the server grew by {grown >> 20} MiB"


def test_without_a_token_the_body_is_not_waited_for(server: Server) -> None:
    with server.connect() as sock:  # a body the route would take, none of it sent yet
        sock.sendall(head("POST", "/api/v1/bot/leases", 512 * 1024))
        status, headers, body = answer(sock)
        assert status == 401 and headers["connection"] == "close"
        assert headers["content-type"] == "application/problem+json"
        assert closed(sock)


def test_a_body_over_the_routes_cap_is_413_before_or_while_it_arrives(server: Server) -> None:
    bot = server.tokens["bot"]
    with server.connect() as sock:  # declared: refused before one byte is read
        sock.sendall(head("POST", "/api/v1/bot/leases", 400 * MIB, bot))
        status, headers, body = answer(sock)
        assert status == 413 and headers["connection"] == "close"
        assert b"Content Too Large" in body
    with server.connect() as sock:  # streamed: refused once the cap (1 MiB) is passed
        sock.sendall(head("POST", "/api/v1/bot/leases", None, bot))
        chunk = b"%x\r\n%s\r\n" % (64 * 1024, b" " * 64 * 1024)
        push(sock, 2 * MIB + len(chunk), chunk)
        status, headers, _ = answer(sock)
        assert status == 413 and headers["connection"] == "close"


def test_routes_that_take_more_take_more(server: Server) -> None:
    """A bot's result (13 MiB) and an events import (--max-import-mb) are over the
    1 MiB of other API calls: refused for what they say, not for their size."""
    result = b'{"job_id": "j", "ok": true, "body_gzip_b64": "' + b"A" * (4 * MIB) + b'"}'
    submitted = httpx.post(f"{server.url}/api/v1/bot/leases/some-lease/result", content=result,
                           headers={"Authorization": f"Bearer {server.tokens['bot']}",
                                    "Content-Type": "application/json"}, timeout=60)
    assert submitted.status_code in (404, 409, 422), submitted.text[:300]
    imported = httpx.post(f"{server.url}/api/v1/events/import", content=b"not json\n" * MIB,
                          headers={"Authorization": f"Bearer {server.tokens['admin']}",
                                   "Content-Type": "application/x-ndjson"}, timeout=60)
    assert imported.status_code == 422 and "upload:1:" in imported.json()["detail"]


def test_a_body_short_of_its_content_length_is_timed_out(server: Server) -> None:
    # a bot's result as large as the route takes, 2 bytes short
    body = b'{"job_id": "j", "ok": true, "body_gzip_b64": "' + b"A" * (12 * MIB) + b'"}'
    path = "/api/v1/bot/leases/some-lease/result"
    before = server.rss()
    with server.connect() as sock:
        sock.sendall(head("POST", path, len(body) + 2, server.tokens["bot"]))
        sock.sendall(body)
        started = time.monotonic()
        status, headers, _ = answer(sock)
        assert status == 408 and headers["connection"] == "close"
        assert time.monotonic() - started < BODY_TIMEOUT + 5
        assert closed(sock)
    grown = server.rss() - before
    assert grown < 32 * MIB, f"the server still holds {grown >> 20} MiB"


# row 13 ----------------------------------------------------------------------------------

def test_a_huge_form_to_login_is_413(server: Server) -> None:
    form = "application/x-www-form-urlencoded"
    with server.connect() as sock:
        sock.sendall(head("POST", "/login", 300 * MIB, content_type=form))
        status, headers, _ = answer(sock)
        assert status == 413 and headers["connection"] == "close"
    with server.connect() as sock:  # no Content-Length: counted as it streams
        sock.sendall(head("POST", "/login", None, content_type=form))
        chunk = b"%x\r\n%s\r\n" % (16 * 1024, b"token=" + b"a" * (16 * 1024 - 6))
        push(sock, 8 * len(chunk), chunk)
        status, headers, _ = answer(sock)
        assert status == 413 and headers["connection"] == "close"


# row 14 ----------------------------------------------------------------------------------

def series(lines: list[str]) -> list[str]:
    return [line for line in lines if line.startswith("crawl_ledger_api_request_seconds_count")]


def test_made_up_methods_add_no_metrics_series(server: Server) -> None:
    with httpx.Client(base_url=server.url, timeout=30) as http:
        for n in range(3):  # every label this test can produce exists before it counts
            http.request(f"MADEUP{n}", "/api/v1/jobs")
            http.request(f"MADEUP{n}", f"/nowhere/{n}")
        server.metrics()  # the scrape's own series, before counting
        before = len(server.metrics())
        for n in range(1000):
            http.request(f"M{n:04X}", "/api/v1/jobs" if n % 2 else f"/nowhere/{n}")
        after = server.metrics()
    assert len(after) == before, f"/metrics grew from {before} to {len(after)} lines"
    counted = series(after)
    assert not [line for line in counted if "MADEUP" in line or 'method="M' in line]
    assert any('method="other",route="/api/v1/jobs",status="405"' in line for line in counted)
    assert any('method="other",route="unmatched",status="404"' in line for line in counted)


def test_dashboard_and_api_routes_are_labelled_by_their_templates(server: Server) -> None:
    with httpx.Client(base_url=server.url, timeout=30) as http:
        assert http.get("/login").status_code == 200
        assert http.get("/jobs/some-id").status_code == 303  # the dashboard: sign in first
        assert http.get("/api/v1/jobs/some-id").status_code == 401
        assert http.get("/static/dashboard.css").status_code == 200
    counted = series(server.metrics())
    for route, status in (("/login", 200), ("/jobs/{job_id}", 303),
                          ("/api/v1/jobs/{job_id}", 401), ("/static/{path}", 200)):
        assert any(f'method="GET",route="{route}",status="{status}"' in line
                   for line in counted), f"no series for {route}"
    assert not [line for line in counted if "some-id" in line]


# row 15 ----------------------------------------------------------------------------------

def test_slowloris_heads_are_closed_while_fresh_requests_are_served(server: Server) -> None:
    slow = [server.connect() for _ in range(20)]
    try:
        for n, sock in enumerate(slow):
            sock.sendall(f"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow-{n}: ".encode())
        started = time.monotonic()
        assert httpx.get(f"{server.url}/healthz", timeout=5).status_code == 200
        trickling = slow[0]
        trickling.settimeout(0.2)
        # one connection keeps trickling bytes of its head: that buys it no time
        deadline = started + HEAD_TIMEOUT + 5
        while True:
            try:
                trickling.sendall(b"x")
            except OSError:
                break
            try:
                if trickling.recv(1) == b"":
                    break
            except TimeoutError:
                pass
            except ConnectionResetError:
                break
            assert time.monotonic() < deadline, "a trickling head kept its connection"
        for sock in slow[1:]:
            assert closed(sock), "a slow head kept its connection"
        assert time.monotonic() - started < HEAD_TIMEOUT + 5
        assert httpx.get(f"{server.url}/healthz", timeout=5).status_code == 200
    finally:
        for sock in slow:
            sock.close()


def test_a_kept_alive_connection_gets_the_same_head_deadline(server: Server) -> None:
    with server.connect() as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        status, _, _ = answer(sock)
        assert status == 200
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: 1")  # the next head never ends
        assert closed(sock)


# fuzz ------------------------------------------------------------------------------------

TEMPLATES = ["/api/v1/jobs", "/api/v1/jobs/{}", "/api/v1/jobs/{}/pause", "/api/v1/stores",
             "/api/v1/stores/{}/disable", "/api/v1/products", "/api/v1/products/{}/history",
             "/api/v1/events", "/api/v1/bot/leases", "/api/v1/bot/leases/{}/result",
             "/api/v1/bot/depart", "/api/v1/events/import", "/api/v1/alerts", "/api/v1/proxies",
             "/login", "/logout", "/jobs/actions", "/stores/{}/disable", "/images/{}",
             "/metrics", "/healthz", "/{}", "/static/{}"]
SEGMENT = st.text(st.characters(min_codepoint=0x21, max_codepoint=0x2FF, exclude_categories=("Cc",),
                                exclude_characters="/?#%"), min_size=1, max_size=12)


@st.composite
def requests(draw: st.DrawFn) -> tuple[str, str, dict[str, str], bytes]:
    method = draw(st.sampled_from(["GET", "POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS"])
                  | st.from_regex(r"\A[A-Z]{1,12}\Z"))
    path = draw(st.sampled_from(TEMPLATES)).replace("{}", draw(SEGMENT))
    headers = {"Content-Type": draw(st.sampled_from(
        ["application/json", "application/x-www-form-urlencoded", "text/plain"]))}
    auth = draw(st.sampled_from(["", "read", "bot", "forged", "cookie"]))
    body = draw(st.binary(max_size=2048) | st.builds(
        lambda worker: b'{"worker": "%s", "max": 1}' % worker.encode(), SEGMENT))
    return method, path, {**headers, "_auth": auth}, body


def test_fuzzed_requests_never_500_and_labels_stay_fixed(server: Server) -> None:
    with httpx.Client(base_url=server.url, timeout=30) as http:
        before = server.rss()

        @given(request=requests())
        @settings(max_examples=800, deadline=None, database=None, derandomize=True,
                  suppress_health_check=list(HealthCheck))
        def check(request: tuple[str, str, dict[str, str], bytes]) -> None:
            method, path, headers, body = request
            auth = headers.pop("_auth")
            if auth in server.tokens:
                headers["Authorization"] = f"Bearer {server.tokens[auth]}"
            elif auth == "forged":
                headers["Authorization"] = "Bearer cl_forged"
            elif auth == "cookie":
                headers["Cookie"] = "crawl_ledger_session=forged"
            sent = http.request(method, path, headers=headers, content=body)
            assert sent.status_code < 500, (method, path, sent.status_code, sent.text[:300])

        check()
    counted = series(server.metrics())
    methods = {re.search(r'method="([^"]*)"', line).group(1) for line in counted}  # type: ignore[union-attr]
    routes = {re.search(r'route="([^"]*)"', line).group(1) for line in counted}  # type: ignore[union-attr]
    assert methods <= {"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "other"}
    template = re.compile(r"(/[a-z0-9_.-]+|/\{[a-z_0-9]+\})+|/|unmatched")
    assert all(template.fullmatch(route) for route in routes), sorted(routes)
    assert len(routes) < 60, sorted(routes)  # the app has fewer routes: none was made up
    assert server.rss() - before < 64 * MIB
