"""The CrawlJob aggregate: one recurring (or one-shot) crawl of an entry point.

States and the commands that move between them::

    scheduled --dispatch--> dispatched --lease--> leased
    scheduled --lease (when due)-------------> leased
    leased --succeed--> succeeded --> scheduled (recurring) | completed (one-shot)
    leased --fail / lease expired--> failed --> scheduled (retry) | dead
        a recurring job whose attempts ran out on a transient cause is not dead:
        `RunAbandoned` schedules its next regular run (attempts reset); nor is one
        after a non-retryable failure, until `NON_RETRYABLE_LIMIT` come in a row
    leased --release--> scheduled (due now; the attempt does not count)
    scheduled --pause--> paused --resume--> scheduled
    scheduled | dispatched | leased | paused --cancel--> cancelled
    dead | scheduled --retry--> scheduled (attempts reset, due now)
    cancelled | completed | dead --reopen--> scheduled (a new run of the same job)
    scheduled --force_run--> scheduled (due now, priority boost for this run)
    scheduled --move--> scheduled (next run moved to spread the load)
    scheduled --skip--> scheduled (due while its store refuses work: next cycle)

`succeeded` and `failed` are momentary: the follow-up event (`Rescheduled`, `RunAbandoned`,
`Completed`, `DeadLettered`) is saved in the same transaction. `completed` and `cancelled`
are terminal until an operator reopens the job. Command methods validate and decide; the `@event` methods only assign.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any
from uuid import UUID

from eventsourcing.domain import event

from domain import ids
from domain.aggregate import LedgerAggregate
from domain.errors import InvalidInput, InvalidTransition, LeaseLost
from domain.job_operations import JobOperations, check_schedule
from domain.retry import MAX_INTERVAL_FACTOR as MAX_INTERVAL_FACTOR  # re-exported
from domain.retry import NON_RETRYABLE_LIMIT, adapted_interval
from domain.retry import RetryPolicy as RetryPolicy  # re-exported: it is part of a job
from domain.snapshot_event import LedgerSnapshot
from domain.upcasting import dispatched_v1_v2, leased_v1_v2
from domain.values import JOB_KINDS, Origin

TERMINAL = frozenset({"completed", "cancelled"})


def _recorder(origin: Origin | None) -> dict[str, str]:
    """Who recorded a result (the worker or bot) and through which surface, as its event's
    fields (none when the caller names no origin, as in history recorded before)."""
    return {} if origin is None else {"actor": origin.actor, "surface": origin.surface}


def _check_ttl(ttl: float) -> None:
    if not 1 <= ttl <= 86400:
        raise InvalidInput(f"lease ttl must be 1..86400 seconds, got {ttl}")


class CrawlJob(JobOperations, LedgerAggregate):
    """A crawl of one URL for one store; its id is derived from (kind, normalised URL)."""

    #: failed attempts since the last success (a class default for state
    #: loaded from aggregate snapshots taken before the counter existed)
    consecutive_failures = 0
    #: non-retryable failures in a row (a class default, as above)
    nonretryable_failures = 0

    Snapshot = LedgerSnapshot
    TUPLE_FIELDS = ("children",)

    @staticmethod
    def create_id(kind: str, url_norm: str, **_: Any) -> UUID:
        return ids.job_id(kind, url_norm)

    @event("Scheduled")
    def __init__(
        self,
        kind: str,
        url_norm: str,
        url: str,
        store_id: str | None,
        interval: int | None,
        priority: int,
        retry_policy: dict[str, Any],
        adaptive: bool,
        next_run_at: datetime,
        parent_job: str | None,
        at: datetime,
    ) -> None:
        self.kind = kind
        self.url = url
        self.url_norm = url_norm
        self.store_id = store_id
        self.base_interval = interval
        self.interval = interval
        self.priority = priority
        self.retry_policy = retry_policy
        self.adaptive = adaptive
        self.next_run_at = next_run_at
        self.parent_job = parent_job
        self.state = "scheduled"
        self.attempt = 0
        self.lease_id: str | None = None
        self.lease_expires_at: datetime | None = None
        self.worker: str | None = None
        self.recorded_lease_id: str | None = None  # the last lease whose result was recorded
        self.last_content_hash: str | None = None
        self.last_error: str | None = None
        self.runs = 0
        self.products: frozenset[str] = frozenset()
        self.children: tuple[str, ...] = ()
        self.boost = 0

    @classmethod
    def schedule(
        cls,
        *,
        kind: str,
        url: str,
        url_norm: str,
        store_id: str | None,
        interval: int | None,
        priority: int,
        retry_policy: RetryPolicy,
        adaptive: bool,
        next_run_at: datetime,
        at: datetime,
        parent_job: str | None = None,
    ) -> CrawlJob:
        """Validate and create a job (`interval=None` means one-shot)."""
        if kind not in JOB_KINDS:
            raise InvalidInput(f"unknown job kind {kind!r}; expected one of {', '.join(JOB_KINDS)}")
        check_schedule(interval, priority)
        return cls(
            kind=kind,
            url_norm=url_norm,
            url=url,
            store_id=store_id,
            interval=interval,
            priority=priority,
            retry_policy=retry_policy.to_payload(),
            adaptive=adaptive,
            next_run_at=next_run_at,
            parent_job=parent_job,
            at=at,
        )

    # queries ----------------------------------------------------------------
    @property
    def policy(self) -> RetryPolicy:
        return RetryPolicy.from_payload(self.retry_policy)

    @property
    def one_shot(self) -> bool:
        return self.interval is None

    def is_due(self, now: datetime) -> bool:
        return self.state == "scheduled" and self.next_run_at <= now

    def outlives_nonretryable(self) -> bool:
        """True when a recurring job's non-retryable failures in a row (the one just
        recorded included) stay under `NON_RETRYABLE_LIMIT`: it skips to its next run."""
        return self.interval is not None and self.nonretryable_failures < NON_RETRYABLE_LIMIT

    def _require(self, action: str, *states: str) -> None:
        if self.state not in states:
            raise InvalidTransition(
                f"cannot {action} job {self.id}: it is {self.state}"
                f" (allowed from {', '.join(states)})"
            )

    # commands: the run ----------------------------------------------------
    def dispatch(self, now: datetime) -> None:
        self._require("dispatch", "scheduled")
        if not self.is_due(now):
            raise InvalidTransition(f"cannot dispatch job {self.id}: not due until {self.next_run_at}")
        self._dispatched(now, self.why(), self.next_run_at, self.priority + self.boost)

    def why(self) -> str:
        """Why this run happens now (what `Dispatched` and `Leased` record)."""
        if self.boost:
            return f"force-run (priority boost {self.boost})"
        if self.attempt:
            return f"retry: attempt {self.attempt + 1} of {self.policy.max_attempts}"
        return f"due (priority {self.priority})" if self.priority else "due"

    def skip(self, reason: str, now: datetime) -> None:
        """A due run not taken (its store refuses work): recorded once, and the job
        waits for its next cycle (an hour for a one-shot job)."""
        self._require("skip", "scheduled")
        self._skipped(reason, now + timedelta(seconds=self.interval or 3600), now)

    def lease(self, worker: str, lease_id: str, ttl: float, now: datetime) -> None:
        """Take the job for one attempt; racing leases conflict on the version."""
        self._require("lease", "scheduled", "dispatched")
        if self.state == "scheduled" and not self.is_due(now):
            raise InvalidTransition(f"cannot lease job {self.id}: not due until {self.next_run_at}")
        _check_ttl(ttl)
        self._leased(worker, lease_id, self.attempt + 1, now + timedelta(seconds=ttl), now,
                     self.why())

    def extend_lease(self, lease_id: str, ttl: float, now: datetime) -> None:
        self.require_lease(lease_id, "extend the lease of")
        _check_ttl(ttl)
        self._lease_extended(lease_id, now + timedelta(seconds=ttl))

    def require_lease(self, lease_id: str, action: str) -> None:
        if self.state != "leased" or self.lease_id != lease_id:
            raise LeaseLost(
                f"cannot {action} job {self.id}: lease {lease_id} is not current"
                f" (job is {self.state}, current lease {self.lease_id})"
            )

    def already_recorded(self, lease_id: str) -> bool:
        """True when this lease's result was recorded before (idempotent resubmission)."""
        return lease_id == self.recorded_lease_id

    def succeed(self, lease_id: str, outcome: dict[str, Any], new_products: list[str],
                now: datetime, origin: Origin | None = None) -> None:
        """Record a successful run, then reschedule (recurring) or complete (one-shot)."""
        self.require_lease(lease_id, "record a result for")
        changed = outcome.get("content_hash") != self.last_content_hash
        self._succeeded(lease_id, self.attempt, dict(outcome, changed=changed),
                        sorted(new_products), now, **_recorder(origin))
        if self.one_shot:
            self._completed(now)
            return
        self._adapt_interval(changed)
        assert self.interval is not None
        self._rescheduled(now + timedelta(seconds=self.interval), "next run", now)

    def _adapt_interval(self, changed: bool) -> None:
        if not self.adaptive or self.base_interval is None or self.interval is None:
            return
        adapted = adapted_interval(self.base_interval, self.interval, changed)
        if adapted is not None:
            self._interval_adapted(*adapted)

    def fail(self, lease_id: str, error_kind: str, message: str, retryable: bool,
             retry_after: float | None, now: datetime, origin: Origin | None = None) -> None:
        """Record a failed attempt, then retry later or dead-letter."""
        self.require_lease(lease_id, "record a failure for")
        if error_kind == "no_products" and self.products:
            retryable = True  # it had products: an empty page may be a bad moment, not the end
        retry_at = self.policy.retry_at(self.attempt, retryable, retry_after, now)
        self._failed(lease_id, self.attempt, error_kind, message, retryable, retry_at, now,
                     **_recorder(origin))
        self._after_failure(retry_at, f"{error_kind}: {message}", now, transient=retryable)

    def expire_lease(self, now: datetime, orphaned: bool = False) -> None:
        """A lease ran out (or its holder is known dead): the attempt counts as failed."""
        self._require("expire the lease of", "leased")
        if not orphaned and (self.lease_expires_at is None or self.lease_expires_at > now):
            raise InvalidTransition(f"lease of job {self.id} has not expired yet")
        retry_at = self.policy.retry_at(self.attempt, True, None, now)
        self._lease_expired(self.lease_id, self.attempt, retry_at, now)
        self._after_failure(retry_at, "lease expired", now, transient=True)

    def release(self, lease_id: str, reason: str, now: datetime) -> None:
        """Its holder gives the job back unfinished (a worker shutting down): due again at
        once, and the attempt does not count."""
        self.require_lease(lease_id, "release")
        self._lease_released(lease_id, reason, now)

    def _after_failure(self, retry_at: datetime | None, reason: str, now: datetime,
                       transient: bool) -> None:
        if retry_at is None and transient and self.interval is not None:
            # a recurring job outlives a transient cause: this run ends, the next is due
            self._run_abandoned(now + timedelta(seconds=self.interval),
                                f"attempts exhausted after {reason}; next regular run", now)
        elif retry_at is None and not transient and self.outlives_nonretryable():
            assert self.interval is not None
            self._run_abandoned(
                now + timedelta(seconds=self.interval),
                f"non-retryable {reason} ({self.nonretryable_failures} of "
                f"{NON_RETRYABLE_LIMIT} in a row before dead-lettering); next regular run", now)
        elif retry_at is None and not transient and self.interval is not None:
            self._dead_lettered(f"{self.nonretryable_failures} non-retryable failures in a row,"
                                f" the last {reason}", now)
        elif retry_at is None:
            self._dead_lettered(f"no attempts left after {reason}", now)
        else:
            self._rescheduled(retry_at, f"retry {self.attempt + 1} after {reason}", now)

    # events ---------------------------------------------------------------
    class Dispatched(LedgerAggregate.Event):
        at: datetime
        reason: str
        due_at: datetime | None
        priority: int | None
        class_version = 2
        upcast_v1_v2 = staticmethod(dispatched_v1_v2)

    class Leased(LedgerAggregate.Event):
        worker: str
        lease_id: str
        attempt: int
        expires_at: datetime
        at: datetime
        reason: str
        class_version = 2
        upcast_v1_v2 = staticmethod(leased_v1_v2)

    @event(Dispatched)
    def _dispatched(self, at: datetime, reason: str, due_at: datetime | None,
                    priority: int | None) -> None:
        self.state = "dispatched"

    @event("Skipped")
    def _skipped(self, reason: str, next_run_at: datetime, at: datetime) -> None:
        self.next_run_at = next_run_at

    @event(Leased)
    def _leased(self, worker: str, lease_id: str, attempt: int, expires_at: datetime,
                at: datetime, reason: str) -> None:
        self.state = "leased"
        self.worker = worker
        self.lease_id = lease_id
        self.attempt = attempt
        self.lease_expires_at = expires_at

    @event("LeaseExtended")
    def _lease_extended(self, lease_id: str, expires_at: datetime) -> None:
        self.lease_expires_at = expires_at

    def _end_lease(self) -> None:
        self.lease_id = None
        self.lease_expires_at = None
        self.worker = None
        self.boost = 0

    @event("Succeeded")
    def _succeeded(self, lease_id: str, attempt: int, outcome: dict[str, Any],
                   new_products: list[str], at: datetime, actor: str | None = None,
                   surface: str | None = None) -> None:
        self._end_lease()
        self.recorded_lease_id = lease_id
        self.state = "succeeded"
        self.attempt = 0
        self.consecutive_failures = 0
        self.nonretryable_failures = 0
        self.runs += 1
        self.last_content_hash = outcome.get("content_hash")
        self.last_error = None
        self.products = self.products | frozenset(new_products)

    @event("Failed")
    def _failed(self, lease_id: str, attempt: int, error_kind: str, message: str,
                retryable: bool, retry_at: datetime | None, at: datetime,
                actor: str | None = None, surface: str | None = None) -> None:
        self._end_lease()
        self.recorded_lease_id = lease_id
        self.state = "failed"
        self.runs += 1
        self.consecutive_failures += 1
        self.nonretryable_failures = 0 if retryable else self.nonretryable_failures + 1
        self.last_error = f"{error_kind}: {message}"

    @event("LeaseExpired")
    def _lease_expired(self, lease_id: str | None, attempt: int, retry_at: datetime | None,
                       at: datetime) -> None:
        self._end_lease()
        self.state = "failed"
        self.runs += 1
        self.consecutive_failures += 1
        self.nonretryable_failures = 0
        self.last_error = "lease_expired: the worker did not report before its lease ran out"

    @event("DeadLettered")
    def _dead_lettered(self, reason: str, at: datetime) -> None:
        self.state = "dead"

    @event("RunAbandoned")
    def _run_abandoned(self, next_run_at: datetime, reason: str, at: datetime) -> None:
        self.state = "scheduled"
        self.attempt = 0
        self.next_run_at = next_run_at

    @event("Completed")
    def _completed(self, at: datetime) -> None:
        self.state = "completed"

    @event("LeaseReleased")
    def _lease_released(self, lease_id: str, reason: str, at: datetime) -> None:
        self._end_lease()
        self.state = "scheduled"
        self.attempt = max(self.attempt - 1, 0)
        self.next_run_at = at

    @event("Rescheduled")
    def _rescheduled(self, next_run_at: datetime, reason: str, at: datetime,
                     actor: str | None = None, surface: str | None = None) -> None:
        self.state = "scheduled"
        self.next_run_at = next_run_at

    @event("IntervalAdapted")
    def _interval_adapted(self, interval: int, reason: str) -> None:
        self.interval = interval

    @event("Paused")
    def _paused(self, at: datetime, actor: str | None = None, surface: str | None = None,
                reason: str | None = None) -> None:
        self.state = "paused"

    @event("Resumed")
    def _resumed(self, next_run_at: datetime, at: datetime, actor: str | None = None,
                 surface: str | None = None, reason: str | None = None) -> None:
        self.state = "scheduled"
        self.next_run_at = next_run_at

    @event("Cancelled")
    def _cancelled(self, at: datetime, actor: str | None = None, surface: str | None = None,
                   reason: str | None = None) -> None:
        self._end_lease()
        self.state = "cancelled"

    @event("RetryRequested")
    def _retry_requested(self, at: datetime, actor: str | None = None,
                         surface: str | None = None, reason: str | None = None) -> None:
        self.state = "scheduled"
        self.attempt = 0
        self.nonretryable_failures = 0
        self.next_run_at = at

    @event("Reopened")
    def _reopened(self, interval: int | None, priority: int, retry_policy: dict[str, Any],
                  adaptive: bool, next_run_at: datetime, at: datetime, actor: str | None = None,
                  surface: str | None = None, reason: str | None = None) -> None:
        self.state = "scheduled"
        self.base_interval = self.interval = interval
        self.priority = priority
        self.retry_policy = retry_policy
        self.adaptive = adaptive
        self.next_run_at = next_run_at
        self.attempt = 0
        self.nonretryable_failures = 0
        self.boost = 0

    @event("ForceRunRequested")
    def _force_run_requested(self, boost: int, at: datetime, actor: str | None = None,
                             surface: str | None = None, reason: str | None = None) -> None:
        self.next_run_at = at
        self.boost = boost

    @event("ChildScheduled")
    def _child_scheduled(self, child_job: str) -> None:
        self.children = self.children + (child_job,)
