"""Operator commands on a crawl job: pause, move, resume, cancel, retry, force-run,
reopen, and noting a job it chained.

A mixin of `CrawlJob`: each command checks the job's state (`_require`) and records
one event; the events and their `@event` methods live on the aggregate.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from domain.errors import InvalidInput
from domain.retry import RetryPolicy
from domain.values import Origin, who_and_where

__all__ = ["ACTION_STATES", "CANCELLABLE", "REOPENABLE", "JobOperations", "actions_for",
           "check_schedule"]

CANCELLABLE = frozenset({"scheduled", "dispatched", "leased", "paused"})
#: the states a job has stopped in for good unless an operator reopens it
REOPENABLE = frozenset({"cancelled", "completed", "dead"})
#: the states each operator action is accepted in (what `_require` checks, and what
#: the dashboard offers)
ACTION_STATES: dict[str, frozenset[str]] = {
    "pause": frozenset({"scheduled"}), "resume": frozenset({"paused"}),
    "cancel": CANCELLABLE, "retry": frozenset({"dead", "scheduled"}),
    "force-run": frozenset({"scheduled"}), "reopen": REOPENABLE,
}


def check_schedule(interval: int | None, priority: int) -> None:
    """Refuse an interval outside 1m..90d (None: one-shot) or a priority outside ±1000."""
    if interval is not None and not 60 <= interval <= 90 * 86400:
        raise InvalidInput(f"interval must be between 1m and 90d, got {interval}s")
    if not -1000 <= priority <= 1000:
        raise InvalidInput(f"priority must be -1000..1000, got {priority}")


def actions_for(state: str) -> tuple[str, ...]:
    """The operator actions a job in `state` accepts."""
    return tuple(action for action, states in ACTION_STATES.items() if state in states)


class JobOperations:
    if TYPE_CHECKING:  # provided by `CrawlJob`
        next_run_at: datetime
        children: tuple[str, ...]
        base_interval: int | None
        priority: int
        retry_policy: dict[str, Any]
        adaptive: bool

        def _require(self, action: str, *states: str) -> None: ...
        def _paused(self, at: datetime, actor: str | None = None, surface: str | None = None,
                    reason: str | None = None) -> None: ...
        def _rescheduled(self, next_run_at: datetime, reason: str, at: datetime) -> None: ...
        def _resumed(self, next_run_at: datetime, at: datetime, actor: str | None = None,
                     surface: str | None = None, reason: str | None = None) -> None: ...
        def _cancelled(self, at: datetime, actor: str | None = None,
                       surface: str | None = None, reason: str | None = None) -> None: ...
        def _retry_requested(self, at: datetime, actor: str | None = None,
                             surface: str | None = None, reason: str | None = None) -> None: ...
        def _force_run_requested(self, boost: int, at: datetime, actor: str | None = None,
                                 surface: str | None = None, reason: str | None = None
                                 ) -> None: ...
        def _reopened(self, interval: int | None, priority: int, retry_policy: dict[str, Any],
                      adaptive: bool, next_run_at: datetime, at: datetime,
                      actor: str | None = None, surface: str | None = None,
                      reason: str | None = None) -> None: ...
        def _child_scheduled(self, child_job: str) -> None: ...

    def pause(self, now: datetime, origin: Origin | None = None) -> None:
        self._require("pause", *sorted(ACTION_STATES["pause"]))
        self._paused(now, **_recorded(origin))

    def move(self, next_run_at: datetime, reason: str, now: datetime,
             origin: Origin | None = None) -> None:
        self._require("move", "scheduled")
        self._rescheduled(next_run_at, reason, now, **who_and_where(origin))

    def resume(self, now: datetime, origin: Origin | None = None) -> None:
        self._require("resume", *sorted(ACTION_STATES["resume"]))
        self._resumed(max(self.next_run_at, now), now, **_recorded(origin))

    def cancel(self, now: datetime, origin: Origin | None = None) -> None:
        self._require("cancel", *sorted(ACTION_STATES["cancel"]))
        self._cancelled(now, **_recorded(origin))

    def retry(self, now: datetime, origin: Origin | None = None) -> None:
        """Operator retry: resets attempts and runs as soon as possible."""
        self._require("retry", *sorted(ACTION_STATES["retry"]))
        self._retry_requested(now, **_recorded(origin))

    def force_run(self, now: datetime, origin: Origin | None = None, boost: int = 100) -> None:
        self._require("force-run", *sorted(ACTION_STATES["force-run"]))
        self._force_run_requested(boost, now, **_recorded(origin))

    def reopen(self, now: datetime, origin: Origin | None = None, *, interval: int | None,
               priority: int, retry_policy: RetryPolicy, adaptive: bool,
               next_run_at: datetime) -> None:
        """Start a cancelled, completed or dead job again, as a new run of the same
        stream, with these settings (`interval=None`: one-shot)."""
        self._require("reopen", *sorted(ACTION_STATES["reopen"]))
        check_schedule(interval, priority)
        self._reopened(interval, priority, retry_policy.to_payload(), adaptive, next_run_at,
                       now, **_recorded(origin))

    def reopen_as_before(self, now: datetime, origin: Origin | None = None) -> None:
        """Reopen with the settings the job had (its base interval), due now."""
        self.reopen(now, origin, interval=self.base_interval, priority=self.priority,
                    retry_policy=RetryPolicy.from_payload(self.retry_policy),
                    adaptive=self.adaptive, next_run_at=now)

    def add_child(self, child_job: str) -> None:
        if child_job not in self.children:
            self._child_scheduled(child_job)


def _recorded(origin: Origin | None) -> dict[str, str | None]:
    """The origin's event fields (none when a command names no origin: old callers and
    history recorded before origins were)."""
    return origin.fields() if origin is not None else {}

