"""Waking the relay when new events commit, instead of only polling.

A PostgreSQL store's recorder notifies on every insert (`eventstore.listen.NotifyWakeup`
listens, handed to the relay by the composition root); other stores poll.
"""

from __future__ import annotations

import threading
from typing import Protocol


class Wakeup(Protocol):
    def wait(self, timeout: float) -> bool:
        """Wait at most `timeout` seconds; True when woken by a commit."""
        ...

    def close(self) -> None: ...


class PollWakeup:
    """Sleep for the timeout (or until `stop` is set)."""

    def __init__(self, stop: threading.Event | None = None) -> None:
        self.stop = stop or threading.Event()

    def wait(self, timeout: float) -> bool:
        self.stop.wait(timeout)
        return False

    def close(self) -> None:
        pass


__all__ = ["PollWakeup", "Wakeup"]
