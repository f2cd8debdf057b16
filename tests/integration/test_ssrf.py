"""The SSRF guard: without an allowlist no request reaches a loopback, private or
metadata address — not the first request, not robots.txt, not a redirect hop, not a
name that resolves (or re-resolves) to one — and the crawl fails `blocked_address`."""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from pathlib import Path
from typing import Any

import pytest
from aiohttp.abc import AbstractResolver, ResolveResult
from http_fixtures import RecordingServer, redirect, serving

from domain.values import CrawlFailure, CrawlOutcome, CrawlSuccess, CrawlTask, Policy
from eventstore.pack_index import open_pack_index
from workers.crawler import build_crawler
from workers.extraction import adapters
from workers.fetching.addresses import AddressGuard, parse_networks
from workers.fetching.http import build_client

PAGE = """<html><head><script type="application/ld+json">
{"@type": "Product", "name": "Lamp", "offers": {"@type": "Offer", "price": "9.50",
 "priceCurrency": "EUR"}}</script></head><body>Lamp</body></html>"""

REFUSED = ["127.0.0.1", "127.8.9.10", "10.0.0.1", "172.16.5.4", "192.168.1.1",
           "169.254.169.254", "100.64.0.1", "224.0.0.1", "0.0.0.0", "255.255.255.255",
           "::1", "::", "fc00::1", "fd12:3456::1", "fe80::1", "ff02::1",
           "::ffff:127.0.0.1", "::ffff:169.254.169.254", "2002:7f00:1::1", "198.18.0.1"]
PUBLIC = ["93.184.216.34", "8.8.8.8", "2606:4700:4700::1111", "::ffff:8.8.8.8"]


@pytest.mark.parametrize("address", REFUSED)
def test_non_public_addresses_are_refused(address: str) -> None:
    assert AddressGuard().refusal(ipaddress.ip_address(address)) is not None


@pytest.mark.parametrize("address", PUBLIC)
def test_public_addresses_pass(address: str) -> None:
    assert AddressGuard().refusal(ipaddress.ip_address(address)) is None


def test_the_allowlist_opens_exactly_its_ranges() -> None:
    guard = AddressGuard(parse_networks("127.0.0.0/8, 10.1.0.0/16"))
    assert guard.refusal(ipaddress.ip_address("127.0.0.1")) is None
    assert guard.refusal(ipaddress.ip_address("10.1.2.3")) is None
    assert guard.refusal(ipaddress.ip_address("10.2.0.1")) is not None
    assert guard.refusal(ipaddress.ip_address("169.254.169.254")) is not None
    with pytest.raises(ValueError, match="not an IP network"):
        parse_networks("127.0.0.0/8, intranet")


def crawl(url: str, tmp_path: Path, guard: AddressGuard, *servers: RecordingServer,
          resolver: AbstractResolver | None = None) -> CrawlOutcome:
    task = CrawlTask(job_id="j", lease_id="l", attempt=1, kind="product_page", url=url,
                     platform="generic", policy=Policy(crawl_delay=0.0))

    async def scenario() -> CrawlOutcome:
        async with serving(*servers), build_client(guard=guard, resolver=resolver) as client:
            crawler = build_crawler(client, tmp_path, open_pack_index, adapters.REGISTRY, guard=guard)
            try:
                return await crawler.crawl(task)
            finally:
                crawler.close()

    return asyncio.run(scenario())


def assert_blocked(outcome: CrawlOutcome, *servers: RecordingServer) -> None:
    assert isinstance(outcome, CrawlFailure), outcome
    assert outcome.error_kind == "blocked_address" and not outcome.retryable, outcome
    assert "blocked address" in outcome.message
    for server in servers:
        assert server.hits == [], f"{server.url('/')} received {server.paths()}"


def test_a_loopback_url_is_refused_and_the_server_sees_nothing(tmp_path: Path) -> None:
    server = RecordingServer()
    server.text("/lamp", PAGE)
    assert_blocked(crawl(server.url("/lamp"), tmp_path, AddressGuard(), server), server)


def test_a_name_resolving_to_loopback_is_refused(tmp_path: Path) -> None:
    server = RecordingServer()
    server.text("/lamp", PAGE)
    url = f"http://localhost:{server.port}/lamp"
    assert_blocked(crawl(url, tmp_path, AddressGuard(), server), server)


def test_allowed_on_purpose_the_same_page_is_crawled(tmp_path: Path) -> None:
    server = RecordingServer()
    server.text("/lamp", PAGE)
    outcome = crawl(server.url("/lamp"), tmp_path, AddressGuard(["127.0.0.0/8"]), server)
    assert isinstance(outcome, CrawlSuccess), outcome
    assert outcome.observations[0].name == "Lamp"


def test_a_redirect_hop_to_a_refused_address_stops_there(tmp_path: Path) -> None:
    inside = RecordingServer("127.0.0.1")
    inside.text("/admin", PAGE)
    outside = RecordingServer("127.0.0.2")  # the only range the operator opened
    outside.route("/lamp", redirect(inside.url("/admin")))
    outside.text("/robots.txt", "User-agent: *\nAllow: /\n", "text/plain")
    guard = AddressGuard(["127.0.0.2/32"])
    outcome = crawl(outside.url("/lamp"), tmp_path, guard, inside, outside)
    assert_blocked(outcome, inside)
    assert "/lamp" in outside.paths()


class Rebinding(AbstractResolver):
    """Answers the connect-time lookup with loopback (the pre-check saw a public address)."""

    async def resolve(self, host: str, port: int = 0,
                      family: socket.AddressFamily = socket.AF_INET) -> list[ResolveResult]:
        return [{"hostname": host, "host": "127.0.0.1", "port": port, "family": socket.AF_INET,
                 "proto": 0, "flags": socket.AI_NUMERICHOST}]

    async def close(self) -> None:
        return None


def test_a_name_rebound_to_loopback_after_the_check_is_refused_at_connect(
        tmp_path: Path) -> None:
    server = RecordingServer()
    server.text("/lamp", PAGE)

    async def public(_host: str) -> list[Any]:
        return ["93.184.216.34"]

    guard = AddressGuard(resolve=public)
    url = f"http://shop.rebind.test:{server.port}/lamp"
    assert_blocked(crawl(url, tmp_path, guard, server, resolver=Rebinding()), server)
