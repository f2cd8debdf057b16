"""The Proxy aggregate: one operator-configured egress proxy and its health history.

Only the proxy's address (scheme://host:port, never the user:password of its URL)
is in its events; the URL with credentials is kept beside the log
(`runtime.proxy_pool`). Operators add, disable and enable proxies; the crawler's
health tracking deactivates one after too many consecutive failures and, after a
cool-down, re-tests it: it is reactivated or kept out (`RetestFailed`). Per-request
counters (successes, latency) are not events: they would flood the log.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any
from urllib.parse import urlsplit
from uuid import UUID

from eventsourcing.domain import event

from domain import ids
from domain.aggregate import LedgerAggregate
from domain.errors import InvalidInput, InvalidTransition
from domain.snapshot_event import LedgerSnapshot
from domain.values import Origin, who_and_where

__all__ = ["PROXY_SCHEMES", "Proxy", "proxy_address"]

PROXY_SCHEMES = ("http", "https")


def proxy_address(url: str) -> str:
    """`scheme://host:port` of a proxy URL, without credentials; `InvalidInput` if unusable."""
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError:
        raise InvalidInput("the proxy URL is not a valid URL") from None
    if parts.scheme.lower() not in PROXY_SCHEMES or not parts.hostname:
        raise InvalidInput(f"a proxy needs an http:// or https:// URL with a host, "
                           f"not {parts.scheme or 'no'} scheme")
    if parts.path not in ("", "/") or parts.query or parts.fragment:
        raise InvalidInput("a proxy URL has no path, query or fragment")
    scheme = parts.scheme.lower()
    port = port or (443 if scheme == "https" else 80)
    host = parts.hostname.lower()
    host = f"[{host}]" if ":" in host else host
    return f"{scheme}://{host}:{port}"


def check_region(region: str | None) -> str | None:
    if region is None:
        return None
    region = region.strip()
    if not region or len(region) > 64:
        raise InvalidInput("a region is 1..64 characters")
    return region


class Proxy(LedgerAggregate):
    """An egress proxy; its id is derived from its address."""

    Snapshot = LedgerSnapshot

    @staticmethod
    def create_id(address: str, **_: Any) -> UUID:
        return ids.proxy_id(address)

    @event("Added")
    def __init__(self, address: str, region: str | None, at: datetime) -> None:
        self.address = address
        self.region = region
        self.enabled = True
        self.disabled_reason: str | None = None
        self.healthy = True
        self.retest_at: datetime | None = None

    @classmethod
    def add(cls, url: str, region: str | None, at: datetime) -> Proxy:
        return cls(address=proxy_address(url), region=check_region(region), at=at)

    # operator commands ------------------------------------------------------
    def disable(self, reason: str, at: datetime, origin: Origin | None = None) -> None:
        if not self.enabled:
            raise InvalidTransition(f"proxy {self.id} is already disabled")
        self._disabled(reason.strip() or "disabled by an operator", at, **who_and_where(origin))

    def enable(self, at: datetime, origin: Origin | None = None) -> None:
        if self.enabled:
            raise InvalidTransition(f"proxy {self.id} is already enabled")
        self._enabled(at, **who_and_where(origin))

    # health -------------------------------------------------------------------
    def deactivate(self, consecutive_failures: int, error: str, retest_at: datetime,
                   at: datetime) -> bool:
        """Take it out after failures; False (nothing recorded) when it already is out."""
        if not self.healthy:
            return False
        self._deactivated(consecutive_failures, error, retest_at, at)
        return True

    def retest_passed(self, at: datetime) -> bool:
        if self.healthy:
            return False
        self._reactivated(at)
        return True

    def retest_failed(self, error: str, retest_at: datetime, at: datetime) -> bool:
        if self.healthy:
            return False
        self._retest_failed(error, retest_at, at)
        return True

    # events -------------------------------------------------------------------
    @event("Disabled")
    def _disabled(self, reason: str, at: datetime, actor: str | None = None,
                  surface: str | None = None) -> None:
        self.enabled = False
        self.disabled_reason = reason

    @event("Enabled")
    def _enabled(self, at: datetime, actor: str | None = None,
                 surface: str | None = None) -> None:
        self.enabled = True
        self.disabled_reason = None

    @event("Deactivated")
    def _deactivated(self, consecutive_failures: int, error: str, retest_at: datetime,
                     at: datetime) -> None:
        self.healthy = False
        self.retest_at = retest_at

    @event("Reactivated")
    def _reactivated(self, at: datetime) -> None:
        self.healthy = True
        self.retest_at = None

    @event("RetestFailed")
    def _retest_failed(self, error: str, retest_at: datetime, at: datetime) -> None:
        self.retest_at = retest_at

