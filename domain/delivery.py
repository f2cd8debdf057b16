"""The Delivery aggregate: one alert, from the event that triggered it to its outcome.

Its id is derived from (subscription, triggering event id), so the same event
can create at most one delivery per subscription however often it is read: a
second handler, a restart or a redelivered Kafka message finds the stream there.

    Triggered -> Attempted -> Delivered
                           -> Failed (retry_at) -> Attempted -> ...
                           -> Failed + Dead (no attempts left, or not retryable)

`Attempted` is recorded *before* the message is sent (intent first): a process
killed while sending leaves a delivery whose outcome is unknown, and the next
attempt sends the very same body under the same idempotency key (the delivery
id), so a receiver that dedupes on the key accepts it once.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any
from uuid import UUID

from eventsourcing.domain import event

from domain import ids
from domain.aggregate import LedgerAggregate
from domain.errors import InvalidTransition
from domain.snapshot_event import LedgerSnapshot

__all__ = ["Delivery"]

FINAL = ("delivered", "dead")


class Delivery(LedgerAggregate):
    """One alert for one subscription and one triggering event."""

    Snapshot = LedgerSnapshot

    @staticmethod
    def create_id(subscription_id: str, event_id: str, **_: Any) -> UUID:
        return ids.delivery_id(subscription_id, event_id)

    @event("Triggered")
    def __init__(self, subscription_id: str, event_id: str, event_type: str,
                 product_id: str, trigger: dict[str, Any], body: str, at: datetime) -> None:
        self.subscription_id = subscription_id
        self.event_id = event_id
        self.body = body
        self.state = "pending"
        self.attempts = 0
        self.next_at = at
        self.attempt_until: datetime | None = None

    def due(self, now: datetime, orphaned: bool = False) -> bool:
        """May an attempt start now? An attempt in flight is due again once its time ran
        out (its sender is presumed gone), or at once when `orphaned` (the single embedded
        runner restarted)."""
        if self.state in FINAL:
            return False
        if self.state == "attempting":
            return orphaned or (self.attempt_until is not None and self.attempt_until <= now)
        return self.next_at <= now

    def attempt(self, until: datetime, at: datetime) -> int:
        """Record the intent to send (attempt n, presumed lost after `until`); returns n."""
        if self.state in FINAL:
            raise InvalidTransition(f"delivery {self.id} is already {self.state}")
        self._attempted(self.attempts + 1, until, at)
        return self.attempts

    def succeed(self, attempt: int, status: int | None, at: datetime) -> None:
        self._require(attempt)
        self._delivered(attempt, status, at)

    def fail(self, attempt: int, error: str, status: int | None, retry_at: datetime | None,
             at: datetime) -> None:
        """A failed attempt; no `retry_at` means no more attempts: it is dead."""
        self._require(attempt)
        self._failed(attempt, error[:500], status, retry_at, at)
        if retry_at is None:
            self._dead(attempt, error[:500], at)

    def _require(self, attempt: int) -> None:
        if self.state != "attempting" or attempt != self.attempts:
            raise InvalidTransition(f"delivery {self.id}: attempt {attempt} is not the one "
                                    f"in flight ({self.state}, attempt {self.attempts})")

    @event("Attempted")
    def _attempted(self, attempt: int, until: datetime, at: datetime) -> None:
        self.state = "attempting"
        self.attempts = attempt
        self.attempt_until = until

    @event("Delivered")
    def _delivered(self, attempt: int, status: int | None, at: datetime) -> None:
        self.state = "delivered"
        self.attempt_until = None

    @event("Failed")
    def _failed(self, attempt: int, error: str, status: int | None,
                retry_at: datetime | None, at: datetime) -> None:
        self.state = "failed"
        self.attempt_until = None
        if retry_at is not None:
            self.next_at = retry_at

    @event("Dead")
    def _dead(self, attempt: int, reason: str, at: datetime) -> None:
        self.state = "dead"
