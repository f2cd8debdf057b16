"""The egress proxy pool in memory: which proxy carries a request, and its health.

Choice per request (`ProxyPool.choose`): among the enabled, healthy proxies the
store's egress allows (any, or those of one region), the one with the fewest
failures in the last `window` seconds; ties go to the lowest latency (EWMA), then
round robin. A proxy out after failures whose cool-down has passed is re-tested
by carrying the next request it is allowed to carry (one at a time): success
reactivates it, failure keeps it out for another cool-down.

Only the proxy's own failures count (`is_proxy_failure`): it could not be reached,
timed out, refused our credentials (407) or said it could not reach the site
(502/504). Whatever the *site* answers, 403 and 429 included, the proxy did its
job: the choice never changes because a site pushes back (politeness backs off
from the site instead; switching addresses to get past a block is exactly what
this crawler refuses to do).

Health *changes* come out of `drain_changes` for the caller to record as events;
the counters stay here (and in the caller's table beside the log).
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from workers.fetching.fetch_errors import FetchError

__all__ = ["HealthChange", "ProxyConfig", "ProxyHealth", "ProxyPool", "is_proxy_failure"]

#: statuses that are the proxy's own answer, not the site's
PROXY_STATUSES = frozenset({407, 502, 504})
PROXY_ERROR_KINDS = frozenset({"connect", "timeout", "dns"})


def is_proxy_failure(error: FetchError) -> bool:
    """Whether a fetch failure through a proxy counts against the proxy."""
    return error.kind in PROXY_ERROR_KINDS or error.http_status in PROXY_STATUSES


@dataclass(frozen=True)
class ProxyConfig:
    """A proxy as the ledger knows it (read model + the URL kept beside the log)."""

    proxy_id: str
    url: str  # with credentials: never printed
    address: str
    region: str | None
    enabled: bool = True
    healthy: bool = True
    retest_at: float | None = None
    #: how many health changes the ledger has recorded for it
    health_changes: int = 0


@dataclass
class ProxyHealth:
    config: ProxyConfig
    healthy: bool
    retest_at: float | None
    health_changes: int
    successes: int = 0
    failures: int = 0
    consecutive_failures: int = 0
    latency: float | None = None
    recent: deque[float] = field(default_factory=deque)
    trial: bool = False
    last_used: int = 0

    @property
    def proxy_id(self) -> str:
        return self.config.proxy_id


@dataclass(frozen=True)
class HealthChange:
    proxy_id: str
    kind: str  # "deactivated" | "reactivated" | "retest_failed"
    at: float
    consecutive_failures: int = 0
    error: str | None = None
    retest_at: float | None = None


class ProxyPool:
    """See the module docstring. `clock` is wall time in seconds (injected in tests)."""

    def __init__(self, clock: Callable[[], float] = time.time, max_failures: int = 3,
                 cooldown: float = 300.0, window: float = 600.0, alpha: float = 0.3) -> None:
        self._clock = clock
        self.max_failures = max_failures
        self.cooldown = cooldown
        self._window = window
        self._alpha = alpha
        self._proxies: dict[str, ProxyHealth] = {}
        self._changes: list[HealthChange] = []
        self._uses = 0

    def update(self, configs: Iterable[ProxyConfig]) -> None:
        """Take the ledger's view; counters survive, and local health changes not yet
        recorded are kept until the ledger has caught up with them."""
        known = {}
        for config in configs:
            health = self._proxies.get(config.proxy_id)
            if health is None:
                health = ProxyHealth(config, config.healthy, config.retest_at,
                                     config.health_changes)
            health.config = config
            if config.health_changes >= health.health_changes:
                health.healthy, health.retest_at = config.healthy, config.retest_at
                health.health_changes = config.health_changes
            known[config.proxy_id] = health
        self._proxies = known

    def proxies(self) -> list[ProxyHealth]:
        return list(self._proxies.values())

    def get(self, proxy_id: str) -> ProxyHealth | None:
        return self._proxies.get(proxy_id)

    def choose(self, egress: str) -> ProxyHealth | None:
        """The proxy for the next request of a store with this egress (None: none usable)."""
        now = self._clock()
        allowed = [p for p in self._proxies.values() if p.config.enabled and _allows(egress, p)]
        for proxy in allowed:
            if (not proxy.healthy and not proxy.trial and proxy.retest_at is not None
                    and proxy.retest_at <= now):
                proxy.trial = True
                return self._used(proxy)
        healthy = [p for p in allowed if p.healthy]
        if not healthy:
            return None
        return self._used(min(healthy, key=lambda p: (
            self._recent_failures(p, now), p.latency or 0.0, p.last_used)))

    def succeeded(self, proxy_id: str, latency: float) -> None:
        """The proxy carried a request (whatever the site answered)."""
        proxy = self._proxies.get(proxy_id)
        if proxy is None:
            return
        proxy.successes += 1
        proxy.consecutive_failures = 0
        proxy.latency = latency if proxy.latency is None else (
            self._alpha * latency + (1 - self._alpha) * proxy.latency)
        if proxy.trial:
            proxy.trial, proxy.healthy, proxy.retest_at = False, True, None
            self._change(proxy, HealthChange(proxy_id, "reactivated", self._clock()))

    def failed(self, proxy_id: str, error: str) -> None:
        """The proxy failed to carry a request (see `is_proxy_failure`)."""
        proxy = self._proxies.get(proxy_id)
        if proxy is None:
            return
        now = self._clock()
        proxy.failures += 1
        proxy.consecutive_failures += 1
        proxy.recent.append(now)
        if proxy.trial:
            proxy.trial, proxy.retest_at = False, now + self.cooldown
            self._change(proxy, HealthChange(proxy_id, "retest_failed", now, error=error,
                                             retest_at=proxy.retest_at))
        elif proxy.healthy and proxy.consecutive_failures >= self.max_failures:
            proxy.healthy, proxy.retest_at = False, now + self.cooldown
            self._change(proxy, HealthChange(
                proxy_id, "deactivated", now, proxy.consecutive_failures, error,
                proxy.retest_at))

    def released(self, proxy_id: str) -> None:
        """The request never reached the proxy (refused before sending): no verdict."""
        proxy = self._proxies.get(proxy_id)
        if proxy is not None:
            proxy.trial = False

    def drain_changes(self) -> list[HealthChange]:
        changes, self._changes = self._changes, []
        return changes

    def _change(self, proxy: ProxyHealth, change: HealthChange) -> None:
        proxy.health_changes += 1
        self._changes.append(change)

    def _used(self, proxy: ProxyHealth) -> ProxyHealth:
        self._uses += 1
        proxy.last_used = self._uses
        return proxy

    def _recent_failures(self, proxy: ProxyHealth, now: float) -> int:
        while proxy.recent and proxy.recent[0] < now - self._window:
            proxy.recent.popleft()
        return len(proxy.recent)


def _allows(egress: str, proxy: ProxyHealth) -> bool:
    if egress == "pool":
        return True
    return egress.startswith("region:") and proxy.config.region == egress[len("region:"):]
