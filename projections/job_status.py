"""Job status: one row per crawl job — state, attempt, next run, lease, last outcome."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from domain.envelope import Envelope
from projections.db import Row
from projections.framework import Handler, Projection, Table, creator, dumps, updater

JOB_STATUS = Table(
    name="job_status",
    key=("job_id",),
    columns={
        "job_id": "text", "kind": "text", "store_id": "text", "url": "text",
        "url_norm": "text", "state": "text", "attempt": "int", "max_attempts": "int",
        "priority": "int", "boost": "int", "interval_s": "int", "next_run_at": "text",
        "lease_id": "text", "worker": "text", "lease_expires_at": "text",
        "last_status": "text", "last_outcome": "json", "last_error_kind": "text",
        "last_error": "text", "last_run_at": "text", "runs": "int", "failures": "int",
        "children": "int", "parent_job": "text", "created_at": "text", "version": "int",
        "updated_at": "text",
    },
    # the due jobs' query (`ReadModel.due_jobs`) sorts by priority + boost, then next run and
    # id: with those in the index the sort reads index entries and looks up only the rows
    # it returns (100,000 due jobs in a SQLite file with its 512 KiB cache: ~107 -> ~19 ms)
    # (state, interval_s, next_run_at): the schedule's load per slot (`runtime.slots.
    # planned_load`) counts recurring jobs from index entries alone (10,000 jobs: 40 -> 6 ms)
    # (next_run_at, job_id): the dashboard's job table unfiltered in its default order
    # reads the page's index entries (a deep page: no sort of every job)
    # (store_id, last_status, last_error_kind, last_run_at): a store's jobs, and the
    # stores page's results per store counted from index entries alone
    indexes=(("state", "next_run_at", "priority", "boost", "job_id"),
             ("store_id", "last_status", "last_error_kind", "last_run_at"),
             ("state", "interval_s", "next_run_at"), ("next_run_at", "job_id")),
)


@dataclass
class JobStatusProjection(Projection):
    name: str = field(default="job_status", init=False)
    tables: tuple[Table, ...] = field(default=(JOB_STATUS,), init=False)

    def handlers(self) -> dict[str, Handler]:
        simple = {
            "Dispatched": lambda r, p: {"state": "dispatched"},
            "Skipped": lambda r, p: {"next_run_at": p["next_run_at"],
                                     "last_error": f"skipped: {p['reason']}"},
            "LeaseExtended": lambda r, p: {"lease_expires_at": p["expires_at"]},
            "DeadLettered": lambda r, p: {"state": "dead", "last_error": p["reason"]},
            "Completed": lambda r, p: {"state": "completed"},
            "Rescheduled": lambda r, p: {"state": "scheduled", "next_run_at": p["next_run_at"]},
            "RunAbandoned": lambda r, p: {"state": "scheduled", "attempt": 0,
                                          "next_run_at": p["next_run_at"],
                                          "last_error": p["reason"]},
            "IntervalAdapted": lambda r, p: {"interval_s": p["interval"]},
            "Paused": lambda r, p: {"state": "paused"},
            "Resumed": lambda r, p: {"state": "scheduled", "next_run_at": p["next_run_at"]},
            "Cancelled": lambda r, p: dict(_END_LEASE, state="cancelled"),
            "LeaseReleased": lambda r, p: dict(_END_LEASE, state="scheduled", next_run_at=p["at"],
                                               attempt=max(int(r["attempt"] or 0) - 1, 0)),
            "RetryRequested": lambda r, p: {"state": "scheduled", "attempt": 0,
                                         "next_run_at": p["at"]},
            "ForceRunRequested": lambda r, p: {"next_run_at": p["at"], "boost": p["boost"]},
            "Reopened": _reopened,
            "Leased": lambda r, p: {"state": "leased", "attempt": p["attempt"],
                                 "lease_id": p["lease_id"], "worker": p["worker"],
                                 "lease_expires_at": p["expires_at"]},
            "Succeeded": _succeeded,
            "Failed": _failed,
            "LeaseExpired": _lease_expired,
            "ChildScheduled": lambda r, p: {"children": int(r["children"] or 0) + 1},
        }
        handlers = {f"CrawlJob.{name}": updater("job_status", change, stamp="updated_at")
                    for name, change in simple.items()}
        handlers["CrawlJob.Scheduled"] = creator("job_status", _scheduled)
        return handlers


_END_LEASE = {"lease_id": None, "worker": None, "lease_expires_at": None, "boost": 0}


def _scheduled(env: Envelope) -> Row:
    p = env.payload
    return {
        "job_id": env.stream_id, "kind": p["kind"], "store_id": p["store_id"], "url": p["url"],
        "url_norm": p["url_norm"], "state": "scheduled", "attempt": 0,
        "max_attempts": p["retry_policy"]["max_attempts"], "priority": p["priority"], "boost": 0,
        "interval_s": p["interval"], "next_run_at": p["next_run_at"], "runs": 0, "failures": 0,
        "children": 0, "parent_job": p["parent_job"], "created_at": env.occurred_at,
        "updated_at": env.occurred_at,
    }


def _reopened(row: Row, p: dict[str, Any]) -> dict[str, Any]:
    return dict(_END_LEASE, state="scheduled", attempt=0, interval_s=p["interval"],
                priority=p["priority"], max_attempts=p["retry_policy"]["max_attempts"],
                next_run_at=p["next_run_at"])


def _ran(row: Row, failed: bool) -> dict[str, Any]:
    return {"runs": int(row["runs"] or 0) + 1,
            "failures": int(row["failures"] or 0) + int(failed)}


def _succeeded(row: Row, p: dict[str, Any]) -> dict[str, Any]:
    return dict(_END_LEASE, **_ran(row, False), state="succeeded", attempt=0, last_status="succeeded",
                last_outcome=dumps(p["outcome"]), last_error_kind=None, last_error=None,
                last_run_at=p["at"])


def _failed(row: Row, p: dict[str, Any]) -> dict[str, Any]:
    return dict(_END_LEASE, **_ran(row, True), state="failed", last_status="failed", last_error_kind=p["error_kind"],
                last_error=f"{p['error_kind']}: {p['message']}", last_run_at=p["at"])


def _lease_expired(row: Row, p: dict[str, Any]) -> dict[str, Any]:
    return dict(_END_LEASE, **_ran(row, True), state="failed", last_status="failed", last_error_kind="lease_expired",
                last_error="lease_expired: the worker did not report before its lease ran out",
                last_run_at=p["at"])
