"""The egress proxy pool as commands (a mixin of `CrawlLedger`).

Operators add, disable and enable proxies and set a store's egress; the crawler's
health tracking reports deactivations and re-test results, each recorded once
(reporting a change that is already recorded is a no-op, so two workers noticing
the same dead proxy record one `Deactivated`).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, TypeVar
from uuid import UUID

from eventsourcing.domain import Aggregate

from domain import ids
from domain.errors import Conflict, InvalidInput, NotFound
from domain.persistence import as_uuid
from domain.proxy import Proxy
from domain.timeutil import command, utc
from domain.values import Origin

if TYPE_CHECKING:
    from domain.store import Store

__all__ = ["ProxyCommands"]

A = TypeVar("A", bound=Aggregate)


class ProxyCommands:
    if TYPE_CHECKING:  # provided by the application class this is mixed into
        def find(self, cls: type[A], aggregate_id: UUID) -> A | None: ...

        def _save(self, *aggregates: Aggregate | None) -> Sequence[int]: ...

        def get_store(self, store_id: UUID | str) -> Store: ...

    @staticmethod
    def check_proxy(url: str, region: str | None, now: datetime) -> str:
        """The proxy's address (no credentials); `InvalidInput` for what `add_proxy` refuses."""
        return Proxy.add(url, region, utc(now)).address

    @command
    def add_proxy(self, url: str, region: str | None, now: datetime) -> UUID:
        """Add a proxy; only its address goes into the event."""
        proxy = Proxy.add(url, region, utc(now))
        if self.find(Proxy, proxy.id) is not None:
            raise InvalidInput(f"proxy {proxy.address} is already added as {proxy.id}")
        self._save(proxy)
        return proxy.id

    def get_proxy(self, proxy_id: UUID | str) -> Proxy:
        found = self.find(Proxy, as_uuid(proxy_id, "proxy"))
        if found is None:
            raise NotFound(f"unknown proxy id {proxy_id}")
        return found

    def find_proxy(self, address: str) -> Proxy | None:
        return self.find(Proxy, ids.proxy_id(address))

    @command
    def disable_proxy(self, proxy_id: UUID | str, reason: str, now: datetime,
                      origin: Origin | None = None) -> None:
        proxy = self.get_proxy(proxy_id)
        proxy.disable(reason, utc(now), origin)
        self._save(proxy)

    @command
    def enable_proxy(self, proxy_id: UUID | str, now: datetime,
                     origin: Origin | None = None) -> None:
        proxy = self.get_proxy(proxy_id)
        proxy.enable(utc(now), origin)
        self._save(proxy)

    @command
    def set_store_egress(self, store_id: UUID | str, egress: str | None, now: datetime) -> None:
        store = self.get_store(store_id)
        store.change_egress(egress)
        self._save(store)

    # health changes reported by the crawler -----------------------------------
    @command
    def deactivate_proxy(self, proxy_id: UUID | str, consecutive_failures: int, error: str,
                         retest_at: datetime, now: datetime) -> bool:
        proxy = self.get_proxy(proxy_id)
        return self._save_if(proxy, proxy.deactivate(consecutive_failures, error,
                                                     utc(retest_at), utc(now)))

    @command
    def record_proxy_retest(self, proxy_id: UUID | str, error: str | None,
                            retest_at: datetime | None, now: datetime) -> bool:
        """A re-test after the cool-down: `error=None` reactivates, else keeps it out."""
        proxy = self.get_proxy(proxy_id)
        if error is None:
            return self._save_if(proxy, proxy.retest_passed(utc(now)))
        assert retest_at is not None
        return self._save_if(proxy, proxy.retest_failed(error, utc(retest_at), utc(now)))

    def _save_if(self, proxy: Proxy, changed: bool) -> bool:
        if not changed:
            return False
        try:
            self._save(proxy)
        except Conflict:
            return False  # another worker recorded a change first
        return True
