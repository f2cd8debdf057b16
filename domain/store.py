"""The Store aggregate: a crawl target (shop, dispensary, marketplace seller)."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime
from typing import Any
from uuid import UUID

from eventsourcing.domain import event

from domain import ids
from domain.aggregate import LedgerAggregate
from domain.errors import InvalidInput, InvalidTransition
from domain.snapshot_event import LedgerSnapshot
from domain.values import Origin, Policy, who_and_where

PLATFORMS = ("dispensary", "shopify", "woocommerce", "jsonld", "microdata", "generic", "locator", "feed")


def check_egress(egress: str | None) -> str | None:
    """A valid egress policy (see `Policy.egress`), or `InvalidInput`."""
    if egress is None or egress == "pool":
        return egress
    region = egress.removeprefix("region:").strip() if egress.startswith("region:") else ""
    if not region or len(region) > 64:
        raise InvalidInput(f"egress must be none, pool or region:<name>, not {egress!r}")
    return f"region:{region}"


class Store(LedgerAggregate):
    """A store we crawl; its id is derived from its base URL."""

    Snapshot = LedgerSnapshot

    @staticmethod
    def create_id(base_url: str, **_: Any) -> UUID:
        return ids.store_id(base_url)

    @event("Registered")
    def __init__(
        self,
        base_url: str,
        name: str,
        platform: str,
        region: str | None,
        timezone: str | None,
        registered_at: datetime,
    ) -> None:
        self.base_url = base_url
        self.name = name
        self.platform = platform
        self.region = region
        self.timezone = timezone
        self.registered_at = registered_at
        self.policy = Policy()
        self.enabled = True
        self.disabled_reason: str | None = None
        self.discovered_by: str | None = None
        self.platform_store_id: str | None = None

    # commands -----------------------------------------------------------
    def change_policy(
        self,
        crawl_delay: float | None = None,
        max_concurrency: int | None = None,
        respect_robots: bool | None = None,
        user_agent: str | None = None,
        origin: Origin | None = None,
    ) -> None:
        new = Policy(
            crawl_delay=self.policy.crawl_delay if crawl_delay is None else float(crawl_delay),
            max_concurrency=self.policy.max_concurrency
            if max_concurrency is None
            else int(max_concurrency),
            respect_robots=self.policy.respect_robots if respect_robots is None else respect_robots,
            user_agent=user_agent or self.policy.user_agent,
        )
        if new.crawl_delay < 0 or new.crawl_delay > 3600:
            raise InvalidInput(f"crawl delay must be 0..3600 seconds, got {new.crawl_delay}")
        if not 1 <= new.max_concurrency <= 64:
            raise InvalidInput(f"max concurrency must be 1..64, got {new.max_concurrency}")
        if new != self.policy:
            self._policy_changed(
                new.crawl_delay, new.max_concurrency, new.respect_robots, new.user_agent,
                **who_and_where(origin)
            )

    def change_egress(self, egress: str | None) -> None:
        """None: direct; "pool": any active proxy; "region:R": an active proxy of region R."""
        egress = check_egress(egress)
        if egress != self.policy.egress:
            self._egress_changed(egress)

    def mark_discovered(self, by_job: str) -> None:
        if self.discovered_by is None:
            self._discovered(by_job)

    def resolve_entry_point(self, platform_store_id: str) -> None:
        if not platform_store_id:
            raise InvalidInput("platform store id is empty")
        if platform_store_id != self.platform_store_id:
            self._entry_point_resolved(platform_store_id)

    def enable(self, origin: Origin | None = None) -> None:
        if self.enabled:
            raise InvalidTransition(f"store {self.id} is already enabled")
        self._enabled(**(origin.fields() if origin is not None else {}))

    def refuses_work(self) -> str | None:
        """Why no job of this store may be dispatched, leased or chained now (None: none).

        The one "store disabled" rule: the command side asks it (a due job of a
        disabled store records `CrawlJob.Skipped` with this reason).
        """
        return None if self.enabled else f"store {self.id} is disabled ({self.disabled_reason})"

    def disable(self, reason: str, origin: Origin | None = None) -> None:
        if not self.enabled:
            raise InvalidTransition(f"store {self.id} is already disabled")
        self._disabled(reason, **who_and_where(origin))

    # events ---------------------------------------------------------------
    @event("PolicyChanged")
    def _policy_changed(
        self, crawl_delay: float, max_concurrency: int, respect_robots: bool, user_agent: str | None,
        actor: str | None = None, surface: str | None = None
    ) -> None:
        self.policy = replace(self.policy, crawl_delay=crawl_delay,
                              max_concurrency=max_concurrency, respect_robots=respect_robots,
                              user_agent=user_agent)

    @event("EgressChanged")
    def _egress_changed(self, egress: str | None) -> None:
        self.policy = replace(self.policy, egress=egress)

    @event("Discovered")
    def _discovered(self, by_job: str) -> None:
        self.discovered_by = by_job

    @event("EntryPointResolved")
    def _entry_point_resolved(self, platform_store_id: str) -> None:
        self.platform_store_id = platform_store_id

    @event("Enabled")
    def _enabled(self, actor: str | None = None, surface: str | None = None,
                 reason: str | None = None) -> None:
        self.enabled = True
        self.disabled_reason = None

    @event("Disabled")
    def _disabled(self, reason: str, actor: str | None = None, surface: str | None = None
                  ) -> None:
        self.enabled = False
        self.disabled_reason = reason
