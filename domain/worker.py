"""The Worker aggregate: one running worker process (embedded runner, Faust worker,
bot) from registration to departure. Its heartbeats are not events (they would flood
the log): they live in the heartbeat table the drivers update (`runtime.heartbeats`)."""

from __future__ import annotations

from datetime import datetime
from typing import Any
from uuid import UUID

from eventsourcing.domain import event

from domain import ids
from domain.aggregate import LedgerAggregate
from domain.errors import InvalidTransition
from domain.snapshot_event import LedgerSnapshot

__all__ = ["Worker"]


class Worker(LedgerAggregate):
    """A worker process; its id is derived from its name (host:pid:driver)."""

    Snapshot = LedgerSnapshot

    @staticmethod
    def create_id(name: str, **_: Any) -> UUID:
        return ids.worker_id(name)

    @event("Registered")
    def __init__(self, name: str, driver: str, host: str, pid: int, version: str,
                 concurrency: int, kinds: list[str], at: datetime) -> None:
        self.name = name
        self.driver = driver
        self.departed = False

    def rejoin(self, driver: str, host: str, pid: int, version: str, concurrency: int,
               kinds: list[str], at: datetime) -> None:
        """The same worker name running again after it departed (a runner restarted)."""
        if not self.departed:
            raise InvalidTransition(f"worker {self.name} has not departed")
        self._rejoined(driver, host, pid, version, concurrency, kinds, at)

    @event("Rejoined")
    def _rejoined(self, driver: str, host: str, pid: int, version: str, concurrency: int,
                  kinds: list[str], at: datetime) -> None:
        self.driver = driver
        self.departed = False

    def depart(self, reason: str, at: datetime) -> None:
        if self.departed:
            raise InvalidTransition(f"worker {self.name} has already departed")
        self._departed(reason, at)

    @event("Departed")
    def _departed(self, reason: str, at: datetime) -> None:
        self.departed = True
