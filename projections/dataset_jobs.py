"""The job datasets' rows: `job_runs` (finished attempts) and `job_states` (state changes).

A mixin of `projections.datasets.DatasetRows`. `job_states` has one row per
`CrawlJob` event that sets the job's state or its next run time, carrying both as
they are *after* the event (an event that sets one keeps the other), so the last
row of a job at or before a time is the job as the aggregate knew it then. Events
that change neither (`LeaseExtended`, `IntervalAdapted`, `ChildScheduled`) give no
row. The row's `changed_at` is the event's recorded time — what `jobs show
--as-of` cuts the history at.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from domain.envelope import Envelope
from projections.parquet_writer import timestamp

__all__ = ["EXPIRED_MESSAGE", "FINISHED", "JOB_STATE_EVENTS", "JobRows"]

FINISHED = {
    "CrawlJob.Succeeded": "succeeded",
    "CrawlJob.Failed": "failed",
    "CrawlJob.LeaseExpired": "expired",
    "CrawlJob.Cancelled": "cancelled",
}
#: event type -> (state after it or None: unchanged, payload field of the next run or None)
JOB_STATE_EVENTS: dict[str, tuple[str | None, str | None]] = {
    "CrawlJob.Scheduled": ("scheduled", "next_run_at"),
    "CrawlJob.Dispatched": ("dispatched", None),
    "CrawlJob.Skipped": (None, "next_run_at"),
    "CrawlJob.Leased": ("leased", None),
    "CrawlJob.Succeeded": ("succeeded", None),
    "CrawlJob.Failed": ("failed", None),
    "CrawlJob.LeaseExpired": ("failed", None),
    "CrawlJob.DeadLettered": ("dead", None),
    "CrawlJob.RunAbandoned": ("scheduled", "next_run_at"),
    "CrawlJob.Completed": ("completed", None),
    "CrawlJob.LeaseReleased": ("scheduled", "at"),
    "CrawlJob.Rescheduled": ("scheduled", "next_run_at"),
    "CrawlJob.Paused": ("paused", None),
    "CrawlJob.Resumed": ("scheduled", "next_run_at"),
    "CrawlJob.Cancelled": ("cancelled", None),
    "CrawlJob.RetryRequested": ("scheduled", "at"),
    "CrawlJob.Reopened": ("scheduled", "next_run_at"),
    "CrawlJob.ForceRunRequested": (None, "at"),
}
#: the aggregate's `last_error` after an expired lease is "lease_expired: <this>"
EXPIRED_MESSAGE = "the worker did not report before its lease ran out"


class JobRows:
    if TYPE_CHECKING:  # provided by `DatasetRows`
        state: dict[str, Any]

        def _add(self, dataset: str, at: datetime, row: dict[str, Any]) -> None: ...

    def _job_event(self, env: Envelope) -> None:
        kind = env.event_type
        if kind == "CrawlJob.Scheduled":
            p = env.payload
            self.state["jobs"][env.stream_id] = [p.get("kind"), p.get("store_id")]
        elif kind == "CrawlJob.Leased":
            self._leased(env)
        if kind in FINISHED:
            self._finished(env)
        if kind in JOB_STATE_EVENTS:
            self._state_changed(env, *JOB_STATE_EVENTS[kind])

    def _job_columns(self, job_id: str) -> dict[str, Any]:
        kind, store_id = self.state["jobs"].get(job_id, [None, None])
        return {"job_id": job_id, "kind": kind, "store_id": store_id,
                "store_name": self.state["stores"].get(store_id)}

    def _state_changed(self, env: Envelope, state: str | None, next_field: str | None) -> None:
        at = timestamp(env.recorded_at)
        before = self.state["job_states"].get(env.stream_id, [None, None, None])
        now_state = state or before[0]
        since = env.recorded_at if now_state != before[0] else before[2]
        next_run = env.payload.get(next_field) if next_field else before[1]
        self.state["job_states"][env.stream_id] = [now_state, next_run, since]
        self._add("job_states", at, dict(
            self._job_columns(env.stream_id), changed_at=at, event_type=env.event_type,
            state=now_state, state_since=timestamp(since) if since else None,
            next_run_at=timestamp(next_run) if next_run else None,
            event_id=env.event_id, position=env.position,
        ))

    def _leased(self, env: Envelope) -> None:
        p = env.payload
        self.state["leases"][env.stream_id] = {
            "attempt": p.get("attempt"), "worker": p.get("worker"), "leased_at": p.get("at"),
            "event_id": env.event_id,
        }

    def _finished(self, env: Envelope) -> None:
        lease = self.state["leases"].pop(env.stream_id, None)
        if lease is None:
            return  # e.g. a job cancelled while scheduled: no attempt to report
        p = env.payload
        at = timestamp(p["at"])
        outcome = p.get("outcome") or {}
        leased_at = timestamp(lease["leased_at"]) if lease.get("leased_at") else None
        duration = outcome.get("duration")
        if duration is None and leased_at is not None:
            duration = (at - leased_at).total_seconds()
        status = FINISHED[env.event_type]
        expired = status == "expired"
        self._add("job_runs", at, dict(
            self._job_columns(env.stream_id), attempt=lease.get("attempt"),
            worker=lease.get("worker"), leased_at=leased_at, finished_at=at, outcome=status,
            error_kind=p.get("error_kind") or ("lease_expired" if expired else None),
            message=p.get("message") or (EXPIRED_MESSAGE if expired else None),
            duration=duration, http_status=outcome.get("http_status"),
            items=outcome.get("items"), lease_event_id=lease.get("event_id"),
            event_id=env.event_id, position=env.position,
        ))
