"""How often a job's run is attempted, and how long to wait between attempts."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from domain.errors import InvalidInput

__all__ = ["MAX_INTERVAL_FACTOR", "NON_RETRYABLE_LIMIT", "RetryPolicy", "adapted_interval"]

#: a recurring job is dead-lettered at this many non-retryable failures in a row (a
#: single one — a page that answered HTML for JSON once — skips to its next regular run)
NON_RETRYABLE_LIMIT = 3


@dataclass(frozen=True)
class RetryPolicy:
    """Attempts per run and the backoff between them: base * 2^(attempt-1), capped."""

    max_attempts: int = 3
    backoff_base: float = 60.0
    backoff_cap: float = 3600.0

    def __post_init__(self) -> None:
        if not 1 <= self.max_attempts <= 100:
            raise InvalidInput(f"max attempts must be 1..100, got {self.max_attempts}")
        if self.backoff_base < 0 or self.backoff_cap < self.backoff_base:
            raise InvalidInput("backoff must satisfy 0 <= base <= cap")

    def delay(self, attempt: int) -> float:
        return float(min(self.backoff_base * 2 ** max(attempt - 1, 0), self.backoff_cap))

    def retry_at(self, attempt: int, retryable: bool, retry_after: float | None,
                 now: datetime) -> datetime | None:
        """When attempt `attempt + 1` runs (not before the site's Retry-After), or None
        when the run has no attempt left or its cause is not retryable."""
        if not retryable or attempt >= self.max_attempts:
            return None
        return now + timedelta(seconds=max(self.delay(attempt), retry_after or 0.0))

    def to_payload(self) -> dict[str, Any]:
        return {
            "max_attempts": self.max_attempts,
            "backoff_base": self.backoff_base,
            "backoff_cap": self.backoff_cap,
        }

    @classmethod
    def from_payload(cls, data: dict[str, Any]) -> RetryPolicy:
        return cls(int(data["max_attempts"]), float(data["backoff_base"]), float(data["backoff_cap"]))


#: adaptive intervals grow up to this many times the base interval
MAX_INTERVAL_FACTOR = 8


def adapted_interval(base: int, current: int, changed: bool) -> tuple[int, str] | None:
    """An adaptive job's next interval and why, or None when it stays: back to `base`
    when the content changed, doubled (up to `MAX_INTERVAL_FACTOR` × base) when not."""
    if changed:
        return None if current == base else (base, f"content changed: reset to {base}s")
    doubled = min(current * 2, base * MAX_INTERVAL_FACTOR)
    if doubled == current:
        return None
    return doubled, f"content unchanged: {current}s doubled to {doubled}s"
