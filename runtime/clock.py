"""Clocks: every driver reads time from one of these and passes it into commands.

Every event's time is its command's `now` (`domain.timeutil.command`), so the
clock a driver is given stamps everything it records: the system clock in
production, a simulated one in the demo and tests.
"""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Protocol


class Clock(Protocol):
    def now(self) -> datetime: ...


class SystemClock:
    def now(self) -> datetime:
        return datetime.now(UTC)


class SimulatedClock:
    """A clock that only moves when told to (the demo's crawl cycles)."""

    def __init__(self, start: datetime) -> None:
        self._now = start
        self._lock = threading.Lock()

    def now(self) -> datetime:
        with self._lock:
            return self._now

    def advance(self, seconds: float) -> datetime:
        with self._lock:
            self._now += timedelta(seconds=seconds)
            return self._now


class FileClock:
    """A clock read from a file holding one ISO-8601 UTC time: the demo's simulated clock,
    shared by the driver (which writes it) and the worker processes (which read it)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)

    def now(self) -> datetime:
        return datetime.fromisoformat(self.path.read_text().strip())

    def set(self, moment: datetime) -> None:
        scratch = self.path.with_suffix(".tmp")
        scratch.write_text(moment.isoformat())
        scratch.replace(self.path)  # atomic: readers never see half a time
