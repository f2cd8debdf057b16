"""How often a job's run is attempted, and how long to wait between attempts."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from domain.errors import InvalidInput

__all__ = ["RetryPolicy"]


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

    def to_payload(self) -> dict[str, Any]:
        return {
            "max_attempts": self.max_attempts,
            "backoff_base": self.backoff_base,
            "backoff_cap": self.backoff_cap,
        }

    @classmethod
    def from_payload(cls, data: dict[str, Any]) -> RetryPolicy:
        return cls(int(data["max_attempts"]), float(data["backoff_base"]), float(data["backoff_cap"]))
