"""Per-host request scheduling: concurrency limit, start spacing and pauses.

One `HostSchedule` per origin, so one host's limits never slow another host.
The clock and sleep are injected, so tests run exactly without real waiting.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

__all__ = ["Clock", "HostSchedule", "Sleep"]

Clock = Callable[[], float]
Sleep = Callable[[float], Awaitable[None]]


class HostSchedule:
    """When the next request to one host may start, and how many may run."""

    def __init__(self, clock: Clock, sleep: Sleep) -> None:
        self._clock = clock
        self._sleep = sleep
        self._active = 0
        self._slots = asyncio.Condition()
        # FIFO: held while waiting for one's turn, so starts are spaced in order.
        self._turn = asyncio.Lock()
        self.next_start = float("-inf")
        self.paused_until = float("-inf")
        self.failures = 0

    async def acquire(self, max_concurrency: int, spacing: float) -> None:
        """Wait for a free slot, then for this host's next permitted start."""
        limit = max(1, max_concurrency)
        async with self._slots:
            await self._slots.wait_for(lambda: self._active < limit)
            self._active += 1
        try:
            await self._wait_turn(spacing)
        except BaseException:
            await self.release()
            raise

    async def release(self) -> None:
        async with self._slots:
            self._active -= 1
            self._slots.notify_all()

    def space_from_now(self, spacing: float) -> None:
        """The next start waits `spacing` from now (not just from the last start)."""
        self.next_start = max(self.next_start, self._clock() + spacing)

    def pause_until(self, when: float) -> None:
        """No request to this host starts before `when` (Retry-After, backoff)."""
        self.paused_until = max(self.paused_until, when)

    def remaining_pause(self) -> float:
        return max(0.0, self.paused_until - self._clock())

    async def _wait_turn(self, spacing: float) -> None:
        async with self._turn:
            # Re-check after every sleep: a pause may arrive while we wait.
            while (wait := max(self.next_start, self.paused_until) - self._clock()) > 0:
                await self._sleep(wait)
            self.next_start = self._clock() + spacing
