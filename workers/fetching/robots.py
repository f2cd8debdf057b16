"""robots.txt per origin (RFC 9309), parsed with protego and cached with a TTL.

- 2xx: the rules apply (cached for `ttl`, default 1 h);
- 4xx (except 429): "unavailable" -> everything is allowed;
- 429, 5xx or unreachable: "unreachable" -> everything is disallowed for
  `unreachable_ttl` (default 10 min), then fetched again.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from urllib.parse import urlsplit

from protego import Protego

from workers.fetching.rate_limit import Clock

__all__ = ["FetchRobots", "FetchRobotsUrl", "RobotsCache", "RobotsFile", "RobotsRules", "origin_of"]


@dataclass(frozen=True)
class RobotsFile:
    """What fetching /robots.txt gave: a status (None = unreachable) and text."""

    status: int | None
    text: str = ""
    detail: str = ""


#: Fetch `robots_url` as `user_agent`; never raises for network errors.
FetchRobots = Callable[[str, str], Awaitable[RobotsFile]]
#: Fetch one robots.txt URL (the user agent and scheduling already bound).
FetchRobotsUrl = Callable[[str], Awaitable[RobotsFile]]


@dataclass(frozen=True)
class RobotsRules:
    """One origin's robots verdicts, valid until `expires`."""

    expires: float
    parser: Protego | None = None
    allow_all: bool = False
    reason: str = ""

    def allows(self, url: str, user_agent: str) -> bool:
        if self.parser is None:
            return self.allow_all
        return bool(self.parser.can_fetch(url, user_agent))

    def crawl_delay(self, user_agent: str) -> float | None:
        if self.parser is None:
            return None
        delay = self.parser.crawl_delay(user_agent)
        return None if delay is None else float(delay)


def origin_of(url: str) -> str:
    """`scheme://host:port`, the unit robots.txt and rate limits apply to."""
    parts = urlsplit(url)
    port = parts.port or {"http": 80, "https": 443}.get(parts.scheme, 0)
    return f"{parts.scheme}://{(parts.hostname or '').lower()}:{port}"


class RobotsCache:
    """Fetches each origin's robots.txt once per TTL, even under concurrency."""

    def __init__(
        self,
        clock: Clock,
        ttl: float = 3600.0,
        unreachable_ttl: float = 600.0,
    ) -> None:
        self._clock = clock
        self._ttl = ttl
        self._unreachable_ttl = unreachable_ttl
        self._rules: dict[str, RobotsRules] = {}
        self._locks: dict[str, asyncio.Lock] = {}

    def cached(self, url: str) -> RobotsRules | None:
        rules = self._rules.get(origin_of(url))
        return rules if rules is not None and rules.expires > self._clock() else None

    async def rules(self, url: str, fetch: FetchRobotsUrl) -> RobotsRules:
        origin = origin_of(url)
        async with self._locks.setdefault(origin, asyncio.Lock()):
            rules = self.cached(url)
            if rules is None:
                robots_url = f"{urlsplit(url).scheme}://{urlsplit(url).netloc}/robots.txt"
                rules = self._interpret(await fetch(robots_url))
                self._rules[origin] = rules
            return rules

    def _interpret(self, robots: RobotsFile) -> RobotsRules:
        now = self._clock()
        status = robots.status
        if status is not None and 200 <= status < 300:
            return RobotsRules(now + self._ttl, parser=Protego.parse(robots.text))
        if status is not None and 400 <= status < 500 and status != 429:
            return RobotsRules(now + self._ttl, allow_all=True, reason=f"HTTP {status}")
        reason = f"HTTP {status}" if status is not None else robots.detail or "unreachable"
        return RobotsRules(now + self._unreachable_ttl, allow_all=False, reason=reason)
