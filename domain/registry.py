"""The worker registry as commands (a mixin of `CrawlLedger`): registration and
departure are events; a worker registering again under its name is a no-op."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, TypeVar
from uuid import UUID

from eventsourcing.domain import Aggregate

from domain import ids
from domain.errors import NotFound
from domain.timeutil import command, utc
from domain.worker import Worker

__all__ = ["WorkerRegistry"]

A = TypeVar("A", bound=Aggregate)


class WorkerRegistry:
    if TYPE_CHECKING:  # provided by the application class this is mixed into
        def find(self, cls: type[A], aggregate_id: UUID) -> A | None: ...

        def _save(self, *aggregates: Aggregate | None) -> Sequence[int]: ...

    @command
    def register_worker(self, *, name: str, driver: str, host: str, pid: int, version: str,
                        concurrency: int, kinds: Sequence[str], now: datetime) -> UUID:
        found = self.find(Worker, ids.worker_id(name))
        if found is not None and not found.departed:
            return found.id
        if found is not None:
            found.rejoin(driver, host, pid, version, concurrency, list(kinds), utc(now))
            self._save(found)
            return found.id
        worker = Worker(name=name, driver=driver, host=host, pid=pid, version=version,
                        concurrency=concurrency, kinds=list(kinds), at=utc(now))
        self._save(worker)
        return worker.id

    @command
    def depart_worker(self, name: str, reason: str, now: datetime) -> None:
        worker = self.find(Worker, ids.worker_id(name))
        if worker is None:
            raise NotFound(f"unknown worker {name}")
        worker.depart(reason, utc(now))
        self._save(worker)
