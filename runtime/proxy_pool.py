"""Egress proxies beside the log, adding them, and keeping the crawler's pool in step.

A proxy's events (`domain.proxy.Proxy`) carry only its address. The URL with
credentials lives in `proxy_urls`, and the per-request health counters in
`proxy_health`, side tables beside `api_tokens` and `alert_channels`
(`ledger.tables.proxies`, a `ProxyTable`; see `runtime.alert_channels` for why
credentials stay out of an immutable, exported, published log). Deleting the
read-model database loses them.

`ProxyKeeper.step` is the runtime side of `workers.fetching.proxy_choice.ProxyPool`: it records
the pool's health changes as events, saves its counters, and refreshes the pool
from the read model (proxies added, disabled, enabled, or changed by other workers).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from typing import Any, Protocol
from uuid import UUID

from domain.errors import InvalidInput
from projections.proxy_status import ProxyQueries
from runtime.ledger import Ledger
from runtime.tables import Counters, ProxyTable
from workers.fetching.addresses import AddressGuard
from workers.fetching.proxy_choice import HealthChange, ProxyConfig, ProxyHealth

__all__ = ["AddressGuard", "PoolPort", "ProxyKeeper", "add_proxy", "proxy_guard",
           "proxy_rows"]

COUNTERS = ("successes", "failures", "consecutive_failures")


def proxy_guard(allowed: AddressGuard | None) -> AddressGuard:
    """The guard that checks a new proxy's address: the operator's, else the default
    (public addresses only)."""
    return allowed or AddressGuard()


async def add_proxy(ledger: Ledger, store: ProxyTable, guard: AddressGuard, url: str,
                    region: str | None, now: datetime) -> UUID:
    """Validate (the URL, its address against the guard), record `Proxy.Added` with the
    address only, then keep the URL beside the log; a refusal records nothing."""
    address = ledger.app.check_proxy(url, region, now)
    try:
        await guard.check(address)
    except Exception as error:  # BlockedAddress, or a name that does not resolve
        raise InvalidInput(f"proxy {address} refused: {error}") from None
    found = ledger.app.find_proxy(address)
    if found is not None:
        raise InvalidInput(f"proxy {address} is already added as {found.id}")
    proxy_id = ledger.app.add_proxy(url, region, now)
    store.put_url(str(proxy_id), url)
    return proxy_id


def proxy_rows(ledger: Ledger, store: ProxyTable) -> list[dict[str, Any]]:
    """The proxies with their state and counters, without credentials."""
    health = store.health()
    rows = []
    for row in ProxyQueries(ledger.db).proxies():
        counters = health.get(row["proxy_id"], {})
        rows.append({**{k: row[k] for k in ("proxy_id", "address", "region", "retest_at",
                                           "disabled_reason", "last_error", "added_at")},
                     "enabled": bool(row["enabled"]), "healthy": bool(row["healthy"]),
                     **{k: int(counters.get(k) or 0) for k in COUNTERS},
                     "latency_ms": None if counters.get("latency") is None
                     else round(float(counters["latency"]) * 1000, 1)})
    return rows


def _epoch(text: str | None) -> float | None:
    return None if text is None else datetime.fromisoformat(text).timestamp()


def _when(epoch: float) -> datetime:
    return datetime.fromtimestamp(epoch, UTC)


class PoolPort(Protocol):
    """What the keeper needs of a pool: the `ProxyPool` itself, or the view of a pool in
    another process (`ledger.drivers.crawl_process.RemotePool`)."""

    def drain_changes(self) -> list[HealthChange]: ...

    def proxies(self) -> list[ProxyHealth]: ...

    def update(self, configs: Iterable[ProxyConfig]) -> None: ...


class ProxyKeeper:
    """Keeps `pool` in step with the ledger (see the module docstring)."""

    def __init__(self, ledger: Ledger, store: ProxyTable, pool: PoolPort,
                 now: Callable[[], datetime]) -> None:
        self.ledger, self.store, self.pool, self._now = ledger, store, pool, now

    def step(self) -> int:
        """Record the pool's health changes, save its counters, refresh it; returns the
        number of events recorded. All in the caller's thread (tests, simple drivers);
        a driver with an event loop does `take` on it and `persist` on a thread."""
        recorded, configs = self.persist(*self.take())
        self.pool.update(configs)
        return recorded

    def take(self) -> tuple[list[HealthChange], list[Counters]]:
        """What changed in the pool since last time (in-memory: on the pool's own loop)."""
        return self.pool.drain_changes(), [
            (p.proxy_id, p.successes, p.failures, p.consecutive_failures, p.latency)
            for p in self.pool.proxies()]

    def persist(self, changes: list[HealthChange], counters: list[Counters]
                ) -> tuple[int, list[ProxyConfig]]:
        """Record `changes` as events, save `counters`; the ledger's proxies for
        `ProxyPool.update`. Touches no pool: safe off the event loop."""
        recorded = sum(self._record(change) for change in changes)
        self.store.save_health(counters)
        return recorded, self.configs()

    def refresh(self) -> None:
        self.pool.update(self.configs())

    def configs(self) -> list[ProxyConfig]:
        urls = self.store.urls()
        return [ProxyConfig(proxy_id=r["proxy_id"], url=urls[r["proxy_id"]],
                            address=r["address"], region=r["region"],
                            enabled=bool(r["enabled"]), healthy=bool(r["healthy"]),
                            retest_at=_epoch(r["retest_at"]),
                            health_changes=int(r["health_changes"] or 0))
                for r in ProxyQueries(self.ledger.db).proxies() if r["proxy_id"] in urls]

    def _record(self, change: HealthChange) -> bool:
        app, at = self.ledger.app, _when(change.at)
        if change.kind == "deactivated":
            assert change.retest_at is not None
            return app.deactivate_proxy(change.proxy_id, change.consecutive_failures,
                                        change.error or "", _when(change.retest_at), now=at)
        retest = None if change.retest_at is None else _when(change.retest_at)
        return app.record_proxy_retest(change.proxy_id, change.error, retest, now=at)
