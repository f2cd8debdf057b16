"""The SSRF guard: no request leaves for a private address unless the operator allowed it.

Every outbound request is checked twice, by the same `AddressGuard`:

- before it is made (`AddressGuard.check`, in the fetcher, for the first request
  and for every redirect hop): a literal IP is judged as it is, a host name is
  resolved and refused when *every* address it resolves to is refused. The result
  is a `FetchError("blocked_address")`, a recorded, non-retryable failure.
- when the connection is opened (`workers.fetching.http.GuardedResolver`, the HTTP client's
  resolver):
  only the addresses the guard accepts are handed to the connector, so the client
  connects to an address it checked. A name that resolves to a public address for
  the first check and to a private one at connect time (DNS rebinding) is refused
  there, and `workers.fetching.fetch_errors` maps that refusal to `blocked_address` too.

Refused unless allowed: loopback, RFC 1918, link-local (cloud metadata at
169.254.169.254), CGNAT (100.64/10), multicast, unspecified, reserved and every
other non-global range, IPv6 unique-local/link-local, and the IPv4-mapped,
6to4 and Teredo forms of any of these. The operator opens ranges on purpose with
`LEDGER_ALLOW_NETWORKS` (CIDRs), e.g. loopback for a local simulator.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
import time
from collections.abc import Callable, Iterable
from functools import lru_cache
from typing import Any
from urllib.parse import urlsplit

from workers.fetching.fetch_errors import FetchError

__all__ = ["AddressGuard", "BlockedAddress", "parse_networks"]

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

#: how long a host name's verdict is reused by the pre-request check
_TTL = 30.0


class BlockedAddress(OSError):
    """Raised by the resolver: every address of the host is refused."""


def parse_networks(text: str) -> tuple[IPNetwork, ...]:
    """'127.0.0.0/8, ::1' -> networks; ValueError naming the bad entry."""
    networks = []
    for item in filter(None, (part.strip() for part in text.split(","))):
        try:
            networks.append(ipaddress.ip_network(item, strict=False))
        except ValueError:
            raise ValueError(f"{item!r} is not an IP network (use CIDR, e.g. 10.0.0.0/8)") from None
    return tuple(networks)


@lru_cache(maxsize=1024)  # pure; each property walks a list of networks
def _category(ip: IPAddress) -> str | None:
    """Why `ip` is not a public address, or None when it is one."""
    if isinstance(ip, ipaddress.IPv6Address):
        embedded = ip.ipv4_mapped or ip.sixtofour or (ip.teredo[1] if ip.teredo else None)
        if embedded is not None:
            return _category(embedded)
    checks = (
        (ip.is_loopback, "loopback"), (ip.is_unspecified, "unspecified"),
        (ip.is_link_local, "link-local"), (ip.is_multicast, "multicast"),
        (ip.is_private, "private"), (ip.is_reserved, "reserved"),
    )
    for flagged, name in checks:
        if flagged:
            return name
    return None if ip.is_global else "not globally routable"


class AddressGuard:
    """Judges addresses against the operator's allowlist; see the module docstring."""

    def __init__(
        self,
        allow: Iterable[IPNetwork | str] = (),
        resolve: Callable[[str], Any] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.allow = tuple(
            ipaddress.ip_network(n, strict=False) if isinstance(n, str) else n for n in allow
        )
        self._resolve = resolve or _getaddrinfo
        self._clock = clock
        self._verdicts: dict[str, tuple[float, str | None]] = {}

    def refusal(self, ip: IPAddress) -> str | None:
        """Why a connection to `ip` is refused, or None when it may be made."""
        if any(ip.version == net.version and ip in net for net in self.allow):
            return None
        category = _category(ip)
        return None if category is None else f"{ip} is {category}"

    async def check(self, url: str, method: str = "GET") -> None:
        """Raise `FetchError("blocked_address")` unless `url`'s host may be contacted."""
        host = (urlsplit(url).hostname or "").rstrip(".")
        if not host:
            return  # the client reports an unusable URL itself
        ip = _ip(host)
        reason = self.refusal(ip) if ip is not None else await self._resolved(host)
        if reason is not None:
            raise FetchError("blocked_address", f"{method} {url}: blocked address: {reason}")

    async def _resolved(self, host: str) -> str | None:
        now = self._clock()
        cached = self._verdicts.get(host)
        if cached is not None and cached[0] > now:
            return cached[1]
        try:
            addresses = await self._resolve(host)
        except OSError:
            return None  # the fetch itself reports the DNS failure
        verdict = self.judge(host, addresses)
        if len(self._verdicts) > 10_000:
            self._verdicts.clear()
        self._verdicts[host] = (now + _TTL, verdict)
        return verdict

    def judge(self, host: str, addresses: Iterable[str]) -> str | None:
        """The refusal for `host` when none of its `addresses` is allowed."""
        reasons = [self.refusal(ipaddress.ip_address(a.split("%")[0])) for a in addresses]
        if reasons and all(reasons):
            return f"{host} resolves to {reasons[0]}"
        return None


@lru_cache(maxsize=1024)
def _ip(host: str) -> IPAddress | None:
    """`host` as an IP address, or None for a name: parsed once per host (a crawl asks
    about the same few hosts for every request)."""
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        return None


async def _getaddrinfo(host: str) -> list[str]:
    infos = await asyncio.get_running_loop().getaddrinfo(host, None, type=socket.SOCK_STREAM)
    return [str(info[4][0]) for info in infos]
