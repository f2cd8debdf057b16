"""When to try a host again: `Retry-After` parsing and exponential backoff."""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime

__all__ = ["Backoff", "parse_retry_after"]


def parse_retry_after(value: str | None, now: float) -> float | None:
    """Seconds to wait from a `Retry-After` value (delta-seconds or HTTP-date).

    `now` is the wall-clock time (epoch seconds) the HTTP-date is relative to.
    Returns None for a missing or unreadable value, never a negative delay.
    """
    if value is None:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:  # RFC 9110 dates are always GMT
        return None
    return max(0.0, when.timestamp() - now)


@dataclass(frozen=True)
class Backoff:
    """Exponential backoff with "equal jitter": half fixed, half random.

    The n-th consecutive failure waits between d/2 and d, d = min(cap, base * 2**(n-1)),
    so hosts are neither hammered nor left idle far longer than needed.
    """

    base: float = 1.0
    cap: float = 300.0
    random: Callable[[], float] = field(default=random.random, compare=False)

    def delay(self, failures: int) -> float:
        if failures <= 0:
            return 0.0
        ceiling = min(self.cap, self.base * 2.0 ** min(failures - 1, 62))
        return ceiling / 2 + ceiling / 2 * self.random()
