"""Routing a crawl's requests through the proxy its store's egress chose.

`Egress` keeps one `httpx.AsyncClient` per proxy (built by `make_client`, e.g.
`build_client(proxy=url, guard=...)`; the guard then checks the proxy's own
address on connect). The crawler enters `Egress.route(policy)` around one page
fetch: every request of it (robots.txt, redirects) goes through the chosen
proxy, read by `Fetcher` from `current_client()`. Politeness, robots.txt and the
address check of the target stay per target origin, as without a proxy.
A store with an egress policy never falls back to a direct connection.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from contextvars import ContextVar
from dataclasses import dataclass

import httpx

from domain.values import Policy
from workers.fetching.fetch_errors import FetchError
from workers.fetching.proxy_choice import ProxyPool, is_proxy_failure

__all__ = ["Egress", "current_client", "note_failure", "note_latency"]

@dataclass
class _Route:
    client: httpx.AsyncClient
    #: seconds spent waiting for the proxy's answers (not for politeness slots)
    latency: float = 0.0
    #: a failure its caller turned into a value instead of raising (an image download)
    failure: FetchError | None = None


_ROUTE: ContextVar[_Route | None] = ContextVar("egress_route", default=None)
#: failures decided before any request left (no verdict on the proxy)
_NOT_SENT = frozenset({"robots_disallowed", "blocked_address"})


def current_client() -> httpx.AsyncClient | None:
    """The proxy client of the request being made (None: the direct client)."""
    route = _ROUTE.get()
    return route.client if route else None


def note_latency(seconds: float) -> None:
    """The fetcher reports how long the routed request took to answer."""
    route = _ROUTE.get()
    if route is not None:
        route.latency += seconds


def note_failure(error: FetchError) -> None:
    """A routed fetch failed and its caller returns the failure as a value (an image
    download): the proxy is judged by it all the same, never credited a success."""
    route = _ROUTE.get()
    if route is not None:
        route.failure = error


class Egress:
    """The proxy pool plus a client per proxy; see the module docstring."""

    def __init__(self, pool: ProxyPool,
                 make_client: Callable[[str], httpx.AsyncClient]) -> None:
        self.pool = pool
        self._make_client = make_client
        self._clients: dict[str, httpx.AsyncClient] = {}

    @asynccontextmanager
    async def route(self, policy: Policy, url: str) -> AsyncIterator[None]:
        """Requests inside go through the proxy `policy.egress` chooses (direct: none)."""
        if policy.egress is None:
            yield
            return
        proxy = self.pool.choose(policy.egress)
        if proxy is None:
            raise FetchError("connect", f"GET {url}: no active egress proxy for "
                             f"{policy.egress} (the store may not connect directly)")
        route = _Route(self._client(proxy.config.url))
        token = _ROUTE.set(route)
        try:
            yield
        except FetchError as error:
            self._judge(proxy.proxy_id, route, error)
            raise
        except BaseException:
            self.pool.released(proxy.proxy_id)
            raise
        else:
            self._judge(proxy.proxy_id, route, route.failure)
        finally:
            _ROUTE.reset(token)

    def _judge(self, proxy_id: str, route: _Route, error: FetchError | None) -> None:
        """The pool's verdict on the proxy after one routed fetch."""
        if error is not None and is_proxy_failure(error):
            self.pool.failed(proxy_id, f"{error.kind}: {error.message}"[:300])
        elif error is not None and error.kind in _NOT_SENT:
            self.pool.released(proxy_id)
        else:  # the site answered through the proxy (403 and 429 included)
            self.pool.succeeded(proxy_id, route.latency)

    def _client(self, url: str) -> httpx.AsyncClient:
        client = self._clients.get(url)
        if client is None:
            client = self._clients[url] = self._make_client(url)
        return client

    async def aclose(self) -> None:
        clients, self._clients = list(self._clients.values()), {}
        for client in clients:
            await client.aclose()
