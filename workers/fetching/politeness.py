"""Politeness: robots.txt, crawl-delay, per-host concurrency, pauses and backoff.

One `Politeness` is shared by all tasks of a worker process:

    async with politeness.slot(url, policy):     # may raise FetchError
        page = await fetcher.fetch(request, politeness.user_agent(policy))

`slot` checks robots.txt, waits for the host's concurrency slot and its next
permitted start (spacing = max(policy.crawl_delay, robots Crawl-delay), and any
Retry-After or backoff pause). With a crawl delay, requests to the host go one
at a time and each waits the delay after the previous one finished, so the
server sees them at least that far apart; without one, `max_concurrency` run
at once. A `FetchError` raised inside the block updates
the host: Retry-After pauses it, transient errors back it off exponentially,
403 backs it off too. Each host has its own schedule; hosts never wait on
each other. No identity rotation: one honest, configurable User-Agent.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

from domain.values import Policy
from workers.fetching.backoff import Backoff
from workers.fetching.fetch_errors import FetchError
from workers.fetching.rate_limit import Clock, HostSchedule, Sleep
from workers.fetching.robots import FetchRobots, RobotsCache, RobotsFile, RobotsRules, origin_of

__all__ = ["DEFAULT_USER_AGENT", "Politeness", "PolitenessConfig"]

DEFAULT_USER_AGENT = "crawl-ledger/0.1 (+https://github.com/crawl-ledger/crawl-ledger)"

#: Failures after which the host is backed off before its next request.
_BACKED_OFF = frozenset({"dns", "connect", "timeout", "http_5xx", "rate_limited", "blocked"})


@dataclass(frozen=True)
class PolitenessConfig:
    user_agent: str = DEFAULT_USER_AGENT
    #: a host paused longer than this fails fast (`rate_limited`, retryable)
    #: instead of holding the task, so the job is rescheduled rather than stuck
    max_wait: float = 120.0
    #: minimum pause after a 403
    blocked_pause: float = 60.0
    robots_ttl: float = 3600.0
    #: robots.txt 5xx/unreachable -> disallow all for this long (RFC 9309)
    robots_unreachable_ttl: float = 600.0
    backoff: Backoff = field(default_factory=Backoff)


class Politeness:
    """Shared per-process politeness state; see the module docstring."""

    def __init__(
        self,
        fetch_robots: FetchRobots,
        clock: Clock,
        sleep: Sleep,
        config: PolitenessConfig = PolitenessConfig(),
    ) -> None:
        self._fetch_robots = fetch_robots
        self._robots = RobotsCache(clock, config.robots_ttl, config.robots_unreachable_ttl)
        self._clock = clock
        self._sleep = sleep
        self._config = config
        self._hosts: dict[str, HostSchedule] = {}

    def user_agent(self, policy: Policy) -> str:
        return policy.user_agent or self._config.user_agent

    def host(self, url: str) -> HostSchedule:
        origin = origin_of(url)
        if origin not in self._hosts:
            self._hosts[origin] = HostSchedule(self._clock, self._sleep)
        return self._hosts[origin]

    @asynccontextmanager
    async def slot(self, url: str, policy: Policy) -> AsyncIterator[None]:
        """Wait until `url` may be requested under `policy`; see the module doc."""
        host = self.host(url)
        self._fail_if_paused_long(url, host)
        spacing = await self._check_robots(url, policy)
        # Under a crawl delay, one request at a time, the next `spacing` after the previous
        # *finished*: spacing starts alone lets a request on a cold connection reach the
        # server after a later one on a warm connection, closer than the delay.
        await host.acquire(1 if spacing > 0 else policy.max_concurrency, spacing)
        try:
            yield
        except FetchError as error:
            self.note_failure(url, error)
            raise
        else:
            host.failures = 0
        finally:
            if spacing > 0:
                host.space_from_now(spacing)
            await host.release()

    async def _scheduled_robots_fetch(self, robots_url: str, policy: Policy) -> RobotsFile:
        """Fetch robots.txt through the host's schedule (it is a request too)."""
        host = self.host(robots_url)
        await host.acquire(policy.max_concurrency, policy.crawl_delay)
        try:
            return await self._fetch_robots(robots_url, self.user_agent(policy))
        finally:
            # usually on a cold connection, so its start is a poor guide to when the
            # host saw it: space the first page from the robots.txt answer instead
            host.space_from_now(policy.crawl_delay)
            await host.release()

    def note_failure(self, url: str, error: FetchError) -> None:
        """Pause the host after a failure that says "slow down" or "not now"."""
        if error.kind not in _BACKED_OFF:
            return
        host = self.host(url)
        host.failures += 1
        pause = self._config.backoff.delay(host.failures)
        if error.retry_after is not None:
            pause = error.retry_after
        if error.kind == "blocked":
            pause = max(pause, self._config.blocked_pause)
        host.pause_until(self._clock() + pause)

    def _fail_if_paused_long(self, url: str, host: HostSchedule) -> None:
        remaining = host.remaining_pause()
        if remaining > self._config.max_wait:
            raise FetchError(
                "rate_limited",
                f"{origin_of(url)} is paused for another {remaining:.0f}s (Retry-After/backoff)",
                retry_after=remaining,
            )

    async def _check_robots(self, url: str, policy: Policy) -> float:
        if not policy.respect_robots:
            return policy.crawl_delay
        user_agent = self.user_agent(policy)
        rules = self._robots.cached(url)
        if rules is None:
            rules = await self._robots.rules(
                url, lambda robots_url: self._scheduled_robots_fetch(robots_url, policy)
            )
        if not rules.allows(url, user_agent):
            raise _disallowed(url, rules, self._clock())
        return max(policy.crawl_delay, rules.crawl_delay(user_agent) or 0.0)


def _disallowed(url: str, rules: RobotsRules, now: float) -> FetchError:
    if rules.parser is not None:
        return FetchError("robots_disallowed", f"GET {url}: disallowed by robots.txt")
    # robots.txt unreachable: a later retry may well succeed
    wait = max(0.0, rules.expires - now)
    return FetchError(
        "robots_disallowed",
        f"GET {url}: robots.txt unreachable ({rules.reason}); disallowing all for {wait:.0f}s",
        retryable=True,
        retry_after=wait,
    )
