"""The fetcher against real loopback servers, through the production client."""

from __future__ import annotations

import asyncio
import gzip
import pickle
import socket
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

import pytest
from aiohttp import web
from aiohttp.abc import AbstractResolver, ResolveResult
from http_fixtures import (
    Handler,
    RecordingServer,
    redirect,
    serving,
    status,
    streaming,
    trickling,
)

from workers.extraction.adapters.base import Page, Request
from workers.fetching.addresses import AddressGuard
from workers.fetching.fetch import Fetcher, FetchLimits
from workers.fetching.fetch_errors import FetchError
from workers.fetching.http import ResponseCookies, build_client
from workers.fetching.politeness import DEFAULT_USER_AGENT

#: these tests' servers listen on loopback, allowed on purpose
LOOPBACK = AddressGuard(["127.0.0.0/8"])

T = TypeVar("T")
MB = 1024 * 1024
DEFAULT_LIMITS = FetchLimits()


def run_with(
    server: RecordingServer,
    body: Callable[[Fetcher], Awaitable[T]],
    limits: FetchLimits = DEFAULT_LIMITS,
) -> T:
    async def scenario() -> T:
        async with serving(server), build_client(guard=LOOPBACK) as client:
            return await body(Fetcher(client, limits, guard=LOOPBACK))

    return asyncio.run(scenario())


def fetch_error(
    server: RecordingServer, path: str, limits: FetchLimits = DEFAULT_LIMITS
) -> FetchError:
    async def body(fetcher: Fetcher) -> FetchError:
        with pytest.raises(FetchError) as caught:
            await fetcher.fetch(Request(server.url(path)), DEFAULT_USER_AGENT)
        return caught.value

    return run_with(server, body, limits)


def fetch_page(server: RecordingServer, path: str) -> Page:
    return run_with(server, lambda f: f.fetch(Request(server.url(path)), DEFAULT_USER_AGENT))


def test_page_with_user_agent_and_final_url_after_redirect() -> None:
    server = RecordingServer()
    server.route("/old", redirect("/new", 301))
    server.text("/new", "<p>ok</p>")
    page = fetch_page(server, "/old")
    assert (page.status, page.text, page.url) == (200, "<p>ok</p>", server.url("/new"))
    assert page.body == b"<p>ok</p>" and page.content_type.startswith("text/html")
    assert [h.user_agent for h in server.hits] == [DEFAULT_USER_AGENT] * 2


def test_gzip_body_is_decoded_and_charset_applied() -> None:
    server = RecordingServer()
    text = "Crème brûlée 12 €"

    async def handler(_: web.Request) -> web.StreamResponse:
        body = gzip.compress(text.encode("cp1252"))
        headers = {"Content-Encoding": "gzip", "Content-Type": "text/html; charset=windows-1252"}
        return web.Response(body=body, headers=headers)

    server.route("/gz", handler)
    page = fetch_page(server, "/gz")
    assert page.text == text and page.body == text.encode("cp1252")


def test_a_fetched_page_is_decoded_once_when_its_text_is_first_read() -> None:
    """A page waiting for its extraction holds its bytes only (100 pages in flight held
    each real page twice, as bytes and as text)."""
    server = RecordingServer()
    text = "Crème brûlée 12 €"
    server.text("/p", text)
    decoded: list[bytes] = []

    def decode(body: bytes, content_type: str) -> str:
        decoded.append(body)
        return body.decode("utf-8")

    async def body(fetcher: Fetcher) -> Page:
        return await fetcher.fetch(Request(server.url("/p")), DEFAULT_USER_AGENT)

    async def scenario() -> Page:
        async with serving(server), build_client(guard=LOOPBACK) as client:
            return await body(Fetcher(client, DEFAULT_LIMITS, decode=decode, guard=LOOPBACK))

    page = asyncio.run(scenario())
    assert decoded == [] and page.body == text.encode()
    assert page.text == text and page.text == text
    assert decoded == [text.encode()]
    assert page.without_text().text == "" and page.without_text().body == page.body
    assert pickle.loads(pickle.dumps(page)) == page
    with pytest.raises(AttributeError, match="immutable"):
        page.url = "http://elsewhere.test/"  # type: ignore[misc]


def test_redirect_loop_stops_at_the_first_repeat() -> None:
    server = RecordingServer()
    server.route("/a", redirect("/b"))
    server.route("/b", redirect("/a"))
    error = fetch_error(server, "/a", FetchLimits(max_redirects=3))
    assert error.kind == "too_many_redirects" and not error.retryable
    assert "redirect loop back to" in error.message and error.message.endswith("/a")
    assert server.paths() == ["/a", "/b"]


def test_a_redirect_chain_longer_than_the_limit_stops() -> None:
    server = RecordingServer()
    for n in range(10):
        server.route(f"/r{n}", redirect(f"/r{n + 1}"))
    error = fetch_error(server, "/r0", FetchLimits(max_redirects=3))
    assert error.kind == "too_many_redirects" and "more than 3 redirects" in error.message
    assert server.paths() == ["/r0", "/r1", "/r2", "/r3"]


def test_huge_streamed_body_is_refused_without_reading_it_all() -> None:
    server = RecordingServer()
    server.route("/big", streaming(server, "big", total=10 * MB, chunk=16 * 1024))
    error = fetch_error(server, "/big", FetchLimits(max_bytes=MB))
    assert error.kind == "too_large" and error.http_status == 200 and error.retryable
    assert server.bytes_sent["big"] < 10 * MB


def test_declared_content_length_over_limit_is_refused_early() -> None:
    server = RecordingServer()
    server.route("/big", streaming(server, "big", 10 * MB, 64 * 1024, declare_length=True))
    error = fetch_error(server, "/big", FetchLimits(max_bytes=MB))
    assert error.kind == "too_large" and "Content-Length 10485760" in error.message
    assert server.bytes_sent["big"] < 10 * MB


def test_trickling_server_hits_the_total_timeout() -> None:
    server = RecordingServer()
    server.route("/slow", trickling(interval=1.0, total=30))
    started = time.monotonic()
    error = fetch_error(server, "/slow", FetchLimits(read_timeout=5.0, total_timeout=1.5))
    elapsed = time.monotonic() - started
    assert error.kind == "timeout" and error.retryable
    assert "1.5s total" in error.message
    assert elapsed < 5.0


@pytest.mark.parametrize(
    ("code", "kind"),
    [(404, "http_4xx"), (410, "http_4xx"), (403, "blocked"), (500, "http_5xx"), (502, "http_5xx")],
)
def test_status_codes_map_to_error_kinds(code: int, kind: str) -> None:
    server = RecordingServer()
    server.route("/x", status(code))
    error = fetch_error(server, "/x")
    assert (error.kind, error.http_status) == (kind, code)


def test_503_with_retry_after_has_a_clear_message() -> None:
    server = RecordingServer()
    server.route("/x", status(503, {"Retry-After": "30"}))
    error = fetch_error(server, "/x")
    assert error.message == f"GET {server.url('/x')}: HTTP 503 Service Unavailable (Retry-After 30s)"
    assert error.retry_after == 30.0 and error.retryable


def test_429_is_rate_limited_with_retry_after() -> None:
    server = RecordingServer()
    server.route("/x", status(429, {"Retry-After": "2"}))
    error = fetch_error(server, "/x")
    assert (error.kind, error.retry_after, error.http_status) == ("rate_limited", 2.0, 429)


def test_connection_refused_is_connect() -> None:
    async def scenario() -> FetchError:
        server = RecordingServer()
        async with serving(server):
            url = server.url("/x")  # the port is closed once the server stops
        async with build_client(guard=LOOPBACK) as client:
            with pytest.raises(FetchError) as caught:
                await Fetcher(client, guard=LOOPBACK).fetch(Request(url), DEFAULT_USER_AGENT)
        return caught.value

    error = asyncio.run(scenario())
    assert error.kind == "connect" and error.retryable


def test_unknown_host_is_dns() -> None:
    async def scenario() -> FetchError:
        async with build_client() as client:
            with pytest.raises(FetchError) as caught:
                await Fetcher(client).fetch(Request("http://no-such-host.invalid/"), "t")
        return caught.value

    error = asyncio.run(scenario())
    assert error.kind == "dns", error.message


def test_a_body_cut_short_is_truncated_and_retryable() -> None:
    async def scenario() -> FetchError:
        async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await reader.readuntil(b"\r\n\r\n")
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n"
                         b"Content-Type: text/html\r\n\r\n" + b"x" * 100)
            await writer.drain()
            writer.close()

        server = await asyncio.start_server(handle, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        try:
            async with build_client(guard=LOOPBACK) as client:
                with pytest.raises(FetchError) as caught:
                    await Fetcher(client, guard=LOOPBACK).fetch(
                        Request(f"http://127.0.0.1:{port}/page"), DEFAULT_USER_AGENT)
        finally:
            server.close()
        return caught.value

    error = asyncio.run(scenario())
    assert error.kind == "truncated" and error.retryable, error.message
    assert "body cut short" in error.message


class Names(AbstractResolver):
    """Resolves the names of `NAMED` to their loopback addresses."""

    async def resolve(self, host: str, port: int = 0,
                      family: socket.AddressFamily = socket.AF_INET) -> list[ResolveResult]:
        return [{"hostname": host, "host": NAMED[host], "port": port, "family": socket.AF_INET,
                 "proto": 0, "flags": socket.AI_NUMERICHOST}]

    async def close(self) -> None:
        return None


#: host names for the two servers' addresses (aiohttp's own jar would keep cookies of
#: named hosts, but not of IP addresses)
NAMED = {"shop.test": "127.0.0.1", "elsewhere.test": "127.0.0.2"}


async def _named(host: str) -> list[str]:
    return [NAMED[host]]


@pytest.mark.parametrize("named", [False, True], ids=["ip-hosts", "named-hosts"])
def test_cookies_a_site_sets_are_sent_back_once_and_only_to_it(named: bool) -> None:
    """The client's jar (`workers.fetching.http.ResponseCookies`) keeps what a page and a
    redirect hop set and sends it on the next requests to that host, once (one jar:
    aiohttp's session keeps none); a response without `Set-Cookie` changes nothing;
    another host gets none."""
    shop, other = RecordingServer(), RecordingServer("127.0.0.2")  # cookies ignore ports
    names = {shop: "shop.test", other: "elsewhere.test"} if named else {}
    guard = AddressGuard(["127.0.0.0/8"], resolve=_named) if named else LOOPBACK
    cookies: dict[str, list[str]] = {}

    def sets(name: str, status_code: int = 200, location: str = "") -> Handler:
        async def handler(request: web.Request) -> web.StreamResponse:
            response = (web.Response(status=status_code, headers={"Location": location})
                        if location else web.Response(text="<html>set</html>",
                                                      content_type="text/html"))
            response.set_cookie(name, "1", path="/")
            return response
        return handler

    def shows(key: str) -> Handler:
        async def handler(request: web.Request) -> web.StreamResponse:
            cookies[key] = request.headers.getall("Cookie", [])
            return web.Response(text="<html>shown</html>", content_type="text/html")
        return handler

    shop.route("/set", sets("page"))
    shop.route("/hop", sets("hop", 302, "/after-hop"))
    shop.route("/plain", shows("plain"))
    shop.route("/after-hop", shows("after-hop"))
    shop.route("/last", shows("last"))
    other.route("/elsewhere", shows("elsewhere"))

    def url(server: RecordingServer, path: str) -> str:
        return f"http://{names[server]}:{server.port}{path}" if named else server.url(path)

    async def scenario() -> dict[str, str]:
        async with serving(shop, other), build_client(
                guard=guard, resolver=Names() if named else None) as client:
            assert isinstance(client.cookies, ResponseCookies)
            fetcher = Fetcher(client, guard=guard)
            for server, path in ((shop, "/set"), (shop, "/plain"), (shop, "/hop"),
                                 (shop, "/last"), (other, "/elsewhere")):
                await fetcher.fetch(Request(url(server, path)), DEFAULT_USER_AGENT)
            return dict(client.cookies)

    kept = asyncio.run(scenario())
    assert kept == {"page": "1", "hop": "1"}
    assert cookies["plain"] == ["page=1"]
    assert cookies["after-hop"] == ["page=1; hop=1"]
    assert cookies["last"] == ["page=1; hop=1"]
    assert cookies["elsewhere"] == []
