"""The scheduler tick and the lease reaper: plain handlers any driver can call.

The embedded runner calls them in its loop; in the distributed deployment
they run once in the cluster (the leader). Both read candidates from the
job-status read model and let the aggregates decide.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from datetime import datetime
from urllib.parse import urlsplit
from uuid import UUID

from domain.values import CrawlTask
from ledger.bootstrap import Ledger
from projections.db import Row


def interleave_by_host(rows: Iterable[Row]) -> list[Row]:
    """Round-robin over hosts, keeping each host's order: one busy host can't fill a slot."""
    by_host: dict[str, list[Row]] = defaultdict(list)
    for row in rows:
        by_host[urlsplit(row["url"]).netloc].append(row)
    queues = list(by_host.values())
    out: list[Row] = []
    while queues:
        out.extend(q.pop(0) for q in queues)
        queues = [q for q in queues if q]
    return out


class Scheduler:
    """Dispatches due jobs in slots of `slot_size` and reaps expired leases."""

    def __init__(self, ledger: Ledger, slot_size: int = 16) -> None:
        self.ledger = ledger
        self.slot_size = slot_size

    def tick(self, now: datetime) -> list[UUID]:
        """Record `Dispatched` for the next slot of due jobs (most urgent first)."""
        due = self.ledger.read.due_jobs(now, limit=self.slot_size * 4)
        chosen = interleave_by_host(due)[: self.slot_size]
        dispatched = self.ledger.app.dispatch_due([r["job_id"] for r in chosen], now)
        return dispatched

    def tick_and_lease(self, now: datetime, worker: str, ttl: float,
                       limit: int | None = None) -> list[CrawlTask]:
        """`tick` for a scheduler that also crawls: the slot is dispatched and leased to
        `worker` in one save (`CrawlLedger.dispatch_and_lease`)."""
        size = self.slot_size if limit is None else max(0, min(limit, self.slot_size))
        if not size:
            return []
        due = self.ledger.read.due_jobs(now, limit=size * 4)
        chosen = interleave_by_host(due)[:size]
        return self.ledger.app.dispatch_and_lease([r["job_id"] for r in chosen], worker, ttl, now)

    def reap(self, now: datetime) -> list[UUID]:
        expired = [r["job_id"] for r in self.ledger.read.expired_leases(now)]
        return self.ledger.app.reap_expired_leases(expired, now) if expired else []

    def recover_orphans(self, now: datetime) -> list[UUID]:
        """Expire every lease now: only for a sole runner that knows the holders are gone."""
        leased = [r["job_id"] for r in self.ledger.read.jobs(state="leased")]
        return self.ledger.app.reap_expired_leases(leased, now, orphaned=True)

    def dispatched(self) -> list[str]:
        """Jobs dispatched but not yet leased (e.g. queued when a runner stopped)."""
        return [r["job_id"] for r in self.ledger.read.dispatched_jobs(limit=10_000)]
