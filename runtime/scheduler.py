"""The scheduler tick and the lease reaper: the steps every driver calls.

The embedded runner calls them in its loop; in the distributed deployment
they run once in the cluster (the leader). Both read candidates from the
job-status read model (`next_slot`) and let the aggregates decide.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Collection, Iterable
from datetime import datetime
from urllib.parse import urlsplit
from uuid import UUID

from domain.values import CrawlTask
from projections.db import Row
from runtime.defaults import DEFAULTS
from runtime.ledger import Ledger

#: "scheme://netloc" followed by the path, query, fragment or the end, where the netloc is
#: plain printable ASCII without brackets: there `urlsplit` finds the same netloc (anything
#: else, such as whitespace it would remove, IPv6 brackets it would check or non-ASCII it
#: would normalise, goes through `urlsplit` itself)
_PLAIN_NETLOC = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://([^\x00-\x20\x7f-\U0010ffff/?#\[\]]*)(?=[/?#]|\Z)")


def url_host(url: str) -> str:
    """`urlsplit(url).netloc` (and its errors), without building the split for the plain
    URLs jobs have: a scheduler tick groups a hundred or so candidates by host."""
    plain = _PLAIN_NETLOC.match(url)
    return plain.group(1) if plain else urlsplit(url).netloc


def interleave_by_host(rows: Iterable[Row]) -> list[Row]:
    """Round-robin over hosts, keeping each host's order: one busy host can't fill a slot."""
    by_host: dict[str, list[Row]] = defaultdict(list)
    for row in rows:
        by_host[url_host(row["url"])].append(row)
    queues = list(by_host.values())
    out: list[Row] = []
    while queues:
        out.extend(q.pop(0) for q in queues)
        queues = [q for q in queues if q]
    return out


class RecentDispatches:
    """The jobs a runner dispatched that its read models may not show yet (they would
    still look due): each is kept until a catch-up that started after its dispatch
    returned has ended. Pass `jobs()` as `Scheduler.next_slot`'s `exclude`."""

    def __init__(self) -> None:
        self._dispatch = 0
        self._jobs: dict[str, int] = {}  # job id -> the number of its dispatch

    def add(self, job_ids: Iterable[str]) -> None:
        self._dispatch += 1
        self._jobs.update((job_id, self._dispatch) for job_id in job_ids)

    def mark(self) -> int:
        """Taken as a catch-up starts; `seen(mark)` once it has ended."""
        return self._dispatch

    def seen(self, mark: int) -> None:
        if self._jobs:
            self._jobs = {job: n for job, n in self._jobs.items() if n > mark}

    def jobs(self) -> frozenset[str]:
        return frozenset(self._jobs)


class Scheduler:
    """Dispatches due jobs in slots of `slot_size` and reaps expired leases."""

    def __init__(self, ledger: Ledger, slot_size: int = DEFAULTS.slot_size) -> None:
        self.ledger = ledger
        self.slot_size = slot_size

    def next_slot(self, now: datetime, size: int,
                  exclude: Collection[str] = ()) -> list[str]:
        """The ids of the next `size` due jobs: most urgent first, interleaved by host.

        `exclude`: jobs the caller knows it dispatched already while the read model may
        not show it yet (they would only be refused by their aggregates)."""
        due = self.ledger.read.due_urls(now, limit=size * 4 + len(exclude))
        if exclude:
            due = [row for row in due if row["job_id"] not in exclude]
        return [r["job_id"] for r in interleave_by_host(due)[:size]]

    def tick(self, now: datetime) -> list[UUID]:
        """Record `Dispatched` for the next slot of due jobs (a driver whose workers lease)."""
        return self.ledger.app.dispatch_due(self.next_slot(now, self.slot_size), now)

    def fill(self, now: datetime, ahead: int) -> list[UUID]:
        """Dispatch slots of due jobs until `ahead` jobs wait dispatched and not yet
        leased, or none is due: the tick of a driver whose workers lease (the
        distributed leader). `ahead` bounds the queue, not the rate: as fast as the
        workers lease, the next tick tops it up.

        The waiting jobs are the read model's `dispatched` ones plus those this call
        dispatched. A job dispatched by the tick before that the read model does not show
        yet is refused by its aggregate, so a lagging read model can let the queue pass
        `ahead` by what it has not caught up with, never dispatch a job twice.
        """
        room = ahead - self.ledger.read.job_count("dispatched")
        dispatched: list[UUID] = []
        tried: set[str] = set()
        while room > 0:
            size = min(self.slot_size, room)
            slot = self.next_slot(now, size, exclude=tried)
            tried.update(slot)
            done = self.ledger.app.dispatch_due(slot, now) if slot else []
            dispatched += done
            room -= len(done)
            if len(slot) < size:  # fewer due than asked for: none left
                break
        return dispatched

    def tick_and_lease(self, now: datetime, worker: str, ttl: float,
                       limit: int | None = None,
                       exclude: Collection[str] = ()) -> list[CrawlTask]:
        """The tick of a driver that also crawls: the slot is dispatched and leased to
        `worker` in one save (`CrawlLedger.dispatch_and_lease`); `exclude` as for
        `next_slot`."""
        size = self.slot_size if limit is None else max(0, min(limit, self.slot_size))
        if not size:
            return []
        return self.ledger.app.dispatch_and_lease(self.next_slot(now, size, exclude), worker,
                                                  ttl, now)

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
