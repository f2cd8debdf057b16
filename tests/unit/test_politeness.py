"""Politeness with virtual time: exact spacing, pauses, backoff and robots rules."""

from __future__ import annotations

import asyncio
import heapq
import itertools
from collections.abc import Awaitable, Callable, Coroutine
from email.utils import formatdate
from typing import Any, TypeVar

import pytest

from domain.values import Policy
from workers.fetching.backoff import Backoff, parse_retry_after
from workers.fetching.fetch_errors import FetchError
from workers.fetching.politeness import DEFAULT_USER_AGENT, Politeness, PolitenessConfig
from workers.fetching.robots import RobotsFile

T = TypeVar("T")


class VirtualTime:
    """A clock and sleep; `run` advances time only when every task is waiting."""

    def __init__(self) -> None:
        self.now = 0.0
        self._timers: list[tuple[float, int, asyncio.Future[None]]] = []
        self._seq = itertools.count()

    def clock(self) -> float:
        return self.now

    async def sleep(self, delay: float) -> None:
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._timers, (self.now + max(0.0, delay), next(self._seq), future))
        await future

    async def _settle(self) -> None:
        for _ in range(100):
            await asyncio.sleep(0)

    async def drive(self, coro: Coroutine[Any, Any, T]) -> T:
        task = asyncio.ensure_future(coro)
        while True:
            await self._settle()
            if task.done():
                return task.result()
            if not self._timers:
                raise AssertionError("deadlock: nothing runnable and no timers")
            when, _, future = heapq.heappop(self._timers)
            self.now = max(self.now, when)
            future.set_result(None)

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        return asyncio.run(self.drive(coro))


class FakeRobots:
    """Serves canned robots.txt answers per origin and counts fetches."""

    def __init__(self, files: dict[str, RobotsFile] | None = None) -> None:
        self.files = files or {}
        self.fetched: list[tuple[str, str]] = []

    async def __call__(self, robots_url: str, user_agent: str) -> RobotsFile:
        self.fetched.append((robots_url, user_agent))
        return self.files.get(robots_url, RobotsFile(404))


def make(
    time: VirtualTime, robots: FakeRobots | None = None, **config: Any
) -> tuple[Politeness, FakeRobots]:
    robots = robots or FakeRobots()
    backoff = Backoff(base=1.0, cap=60.0, random=lambda: 1.0)
    settings = PolitenessConfig(backoff=backoff, **config)
    return Politeness(robots, time.clock, time.sleep, settings), robots


async def request(
    politeness: Politeness,
    url: str,
    policy: Policy,
    starts: list[tuple[str, float]],
    clock: Callable[[], float],
    work: Callable[[], Awaitable[None]] | None = None,
) -> None:
    async with politeness.slot(url, policy):
        starts.append((url, clock()))
        if work is not None:
            await work()


# --- Retry-After and backoff -------------------------------------------------


def test_retry_after_seconds() -> None:
    assert parse_retry_after("30", now=1000.0) == 30.0
    assert parse_retry_after(" 0 ", now=1000.0) == 0.0


def test_retry_after_http_date_is_relative_to_now() -> None:
    now = 1_700_000_000.0
    assert parse_retry_after(formatdate(now + 90, usegmt=True), now) == 90.0
    assert parse_retry_after(formatdate(now - 90, usegmt=True), now) == 0.0


@pytest.mark.parametrize("value", [None, "", "soon", "-5", "1.5e3", "Mon, 99 Foo 2024"])
def test_retry_after_unreadable_is_none(value: str | None) -> None:
    assert parse_retry_after(value, now=0.0) is None


def test_backoff_doubles_with_equal_jitter_and_caps() -> None:
    high = Backoff(base=2.0, cap=10.0, random=lambda: 1.0)
    low = Backoff(base=2.0, cap=10.0, random=lambda: 0.0)
    assert [high.delay(n) for n in range(5)] == [0.0, 2.0, 4.0, 8.0, 10.0]
    assert [low.delay(n) for n in range(5)] == [0.0, 1.0, 2.0, 4.0, 5.0]
    assert high.delay(10_000) == 10.0


# --- spacing and concurrency ---------------------------------------------------


def test_request_starts_are_spaced_per_host_and_hosts_are_independent() -> None:
    time = VirtualTime()
    politeness, _ = make(time)
    policy = Policy(crawl_delay=2.0, max_concurrency=5, respect_robots=False)
    starts: list[tuple[str, float]] = []
    urls = [f"http://a.test/{i}" for i in range(4)] + [f"http://b.test/{i}" for i in range(2)]

    async def scenario() -> None:
        await asyncio.gather(*(request(politeness, u, policy, starts, time.clock) for u in urls))

    time.run(scenario())
    a_starts = [t for u, t in starts if "a.test" in u]
    b_starts = [t for u, t in starts if "b.test" in u]
    assert a_starts == [0.0, 2.0, 4.0, 6.0]
    assert b_starts == [0.0, 2.0]


def test_concurrency_limit_per_host() -> None:
    time = VirtualTime()
    politeness, _ = make(time)
    policy = Policy(crawl_delay=0.0, max_concurrency=2, respect_robots=False)
    active = 0
    peak = 0

    async def work() -> None:
        nonlocal active, peak
        active += 1
        peak = max(peak, active)
        await time.sleep(1.0)
        active -= 1

    async def scenario() -> None:
        urls = [f"http://a.test/{i}" for i in range(6)]
        await asyncio.gather(*(request(politeness, u, policy, [], time.clock, work) for u in urls))

    time.run(scenario())
    assert peak == 2
    assert time.now == 3.0


# --- robots.txt ----------------------------------------------------------------

ROBOTS = "User-agent: *\nDisallow: /private\nCrawl-delay: 5\n"


def test_robots_disallow_and_crawl_delay() -> None:
    time = VirtualTime()
    robots = FakeRobots({"http://a.test/robots.txt": RobotsFile(200, ROBOTS)})
    politeness, _ = make(time, robots)
    policy = Policy(crawl_delay=1.0)
    starts: list[tuple[str, float]] = []

    async def scenario() -> FetchError:
        await request(politeness, "http://a.test/one", policy, starts, time.clock)
        await request(politeness, "http://a.test/two", policy, starts, time.clock)
        with pytest.raises(FetchError) as caught:
            await request(politeness, "http://a.test/private/x", policy, starts, time.clock)
        return caught.value

    error = time.run(scenario())
    assert error.kind == "robots_disallowed" and not error.retryable
    # the robots fetch itself starts at 0; pages follow 1 s later, then 5 s apart
    assert [t for _, t in starts] == [1.0, 6.0]
    assert robots.fetched == [("http://a.test/robots.txt", DEFAULT_USER_AGENT)]


def test_robots_cached_for_ttl_then_refetched() -> None:
    time = VirtualTime()
    robots = FakeRobots({"http://a.test/robots.txt": RobotsFile(200, ROBOTS)})
    politeness, _ = make(time, robots, robots_ttl=100.0)
    policy = Policy(crawl_delay=0.0)

    async def scenario() -> None:
        for _ in range(3):
            await request(politeness, "http://a.test/x", policy, [], time.clock)
        await time.sleep(101.0)
        await request(politeness, "http://a.test/x", policy, [], time.clock)

    time.run(scenario())
    assert len(robots.fetched) == 2


def test_robots_fetched_once_under_concurrency() -> None:
    time = VirtualTime()
    robots = FakeRobots({"http://a.test/robots.txt": RobotsFile(200, "")})
    politeness, _ = make(time, robots)
    policy = Policy(crawl_delay=0.0, max_concurrency=10)

    async def scenario() -> None:
        urls = [f"http://a.test/{i}" for i in range(10)]
        await asyncio.gather(*(request(politeness, u, policy, [], time.clock) for u in urls))

    time.run(scenario())
    assert len(robots.fetched) == 1


@pytest.mark.parametrize("status", [401, 403, 404, 410])
def test_robots_4xx_allows_all(status: int) -> None:
    time = VirtualTime()
    robots = FakeRobots({"http://a.test/robots.txt": RobotsFile(status, "Disallow: /")})
    politeness, _ = make(time, robots)
    starts: list[tuple[str, float]] = []
    time.run(request(politeness, "http://a.test/x", Policy(), starts, time.clock))
    assert len(starts) == 1


@pytest.mark.parametrize("robots_file", [RobotsFile(503), RobotsFile(429), RobotsFile(None)])
def test_robots_5xx_or_unreachable_disallows_all_for_a_while(robots_file: RobotsFile) -> None:
    time = VirtualTime()
    robots = FakeRobots({"http://a.test/robots.txt": robots_file})
    politeness, _ = make(time, robots, robots_unreachable_ttl=600.0)
    policy = Policy(crawl_delay=0.0)

    async def attempt() -> FetchError:
        with pytest.raises(FetchError) as caught:
            await request(politeness, "http://a.test/x", policy, [], time.clock)
        return caught.value

    async def scenario() -> tuple[FetchError, FetchError, int]:
        first = await attempt()
        await time.sleep(599.0)
        second = await attempt()
        fetched_before_expiry = len(robots.fetched)
        await time.sleep(2.0)
        robots.files.clear()  # now a 404: allowed
        await request(politeness, "http://a.test/x", policy, [], time.clock)
        return first, second, fetched_before_expiry

    first, second, fetched = time.run(scenario())
    assert first.kind == "robots_disallowed" and first.retryable
    assert first.retry_after == 600.0 and second.retry_after == 1.0
    assert fetched == 1 and len(robots.fetched) == 2


def test_respect_robots_false_skips_robots() -> None:
    time = VirtualTime()
    robots = FakeRobots({"http://a.test/robots.txt": RobotsFile(200, "Disallow: /")})
    politeness, _ = make(time, robots)
    time.run(request(politeness, "http://a.test/x", Policy(respect_robots=False), [], time.clock))
    assert robots.fetched == []


def test_policy_user_agent_overrides_default() -> None:
    politeness, _ = make(VirtualTime())
    assert politeness.user_agent(Policy()) == DEFAULT_USER_AGENT
    assert politeness.user_agent(Policy(user_agent="acme-bot/2")) == "acme-bot/2"


# --- pauses after failures -----------------------------------------------------


async def failing(politeness: Politeness, url: str, error: FetchError) -> None:
    with pytest.raises(FetchError):
        async with politeness.slot(url, Policy(crawl_delay=0.0, respect_robots=False)):
            raise error


def test_retry_after_pauses_only_that_host() -> None:
    time = VirtualTime()
    politeness, _ = make(time)
    policy = Policy(crawl_delay=0.0, respect_robots=False)
    starts: list[tuple[str, float]] = []
    limited = FetchError("rate_limited", "429", http_status=429, retry_after=30.0)

    async def scenario() -> None:
        await failing(politeness, "http://a.test/1", limited)
        await asyncio.gather(
            request(politeness, "http://a.test/2", policy, starts, time.clock),
            request(politeness, "http://b.test/1", policy, starts, time.clock),
        )

    time.run(scenario())
    assert dict(starts) == {"http://b.test/1": 0.0, "http://a.test/2": 30.0}


def test_long_pause_fails_fast_as_rate_limited() -> None:
    time = VirtualTime()
    politeness, _ = make(time, max_wait=60.0)
    limited = FetchError("http_5xx", "503", http_status=503, retry_after=3600.0)

    async def scenario() -> FetchError:
        await failing(politeness, "http://a.test/1", limited)
        with pytest.raises(FetchError) as caught:
            await request(politeness, "http://a.test/2", Policy(), [], time.clock)
        return caught.value

    error = time.run(scenario())
    assert error.kind == "rate_limited" and error.retryable
    assert error.retry_after == 3600.0


def test_transient_failures_back_off_exponentially_and_success_resets() -> None:
    time = VirtualTime()
    politeness, _ = make(time)
    policy = Policy(crawl_delay=0.0, respect_robots=False)
    timeout = FetchError("timeout", "timed out")
    starts: list[tuple[str, float]] = []

    async def scenario() -> None:
        for _ in range(3):  # pauses 1, 2, 4 (base 1, random 1.0)
            await failing(politeness, "http://a.test/x", timeout)
        await request(politeness, "http://a.test/ok", policy, starts, time.clock)
        await failing(politeness, "http://a.test/x", timeout)
        await request(politeness, "http://a.test/ok", policy, starts, time.clock)

    time.run(scenario())
    assert [t for _, t in starts] == [7.0, 8.0]


def test_not_found_does_not_back_off() -> None:
    time = VirtualTime()
    politeness, _ = make(time)
    time.run(failing(politeness, "http://a.test/x", FetchError("http_4xx", "404")))
    assert politeness.host("http://a.test/").remaining_pause() == 0.0


def test_forbidden_backs_the_host_off() -> None:
    time = VirtualTime()
    politeness, _ = make(time, blocked_pause=60.0)
    time.run(failing(politeness, "http://a.test/x", FetchError("blocked", "403", http_status=403)))
    assert politeness.host("http://a.test/").remaining_pause() == 60.0
    assert politeness.host("http://b.test/").remaining_pause() == 0.0
