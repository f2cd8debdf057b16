"""The projector beside `serve`: one thread that keeps the read models current.

Reads (the HTTP API, the dashboard, `/metrics`) never project: they read the read
models as they are and report how far behind the event log they are
(`Ledger.projection_position`). This thread catches the read models up whenever it
is woken (a driver in this process recorded something: `wake`) and otherwise every
`every` seconds, so events recorded by other processes (a runner, bots, the CLI)
reach them too. An embedded runner on the same store projects as well: catching up
is idempotent (each transaction applies only what is past the tracked positions),
so whichever comes second finds nothing to do.

`wait_past(position, timeout)` is read-your-writes for a driver: it returns once
the read models have applied `position` (or at the deadline, or at once when the
thread is not running).
"""

from __future__ import annotations

import logging
import threading

from runtime.ledger import Ledger

__all__ = ["Projector"]

log = logging.getLogger(__name__)

#: seconds between passes when nothing wakes the projector
EVERY = 0.25
#: seconds before a pass is tried again after one failed (the store unreachable)
RETRY = 1.0


class Projector:
    """Catches `ledger`'s read models up in a thread of its own until `stop`."""

    def __init__(self, ledger: Ledger, every: float = EVERY, retry: float = RETRY) -> None:
        self.ledger = ledger
        self.every = every
        self.retry = retry
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self._reached = threading.Condition()
        self._position = 0
        self._thread: threading.Thread | None = None

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def start(self) -> None:
        """One pass in the caller's thread (the read models are current when it returns,
        unless the store cannot be reached: then the thread keeps trying), then the
        thread."""
        if self.running:
            return
        self._stopping.clear()
        try:
            self.run_pass()
        except Exception:  # noqa: BLE001 - the server still starts; /readyz says why not
            log.exception("projector: the first catch-up failed; retrying in the background")
        self._thread = threading.Thread(target=self._run, name="projector", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 30.0) -> None:
        self._stopping.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None
        with self._reached:
            self._reached.notify_all()

    def wake(self) -> None:
        """Start a pass now (or right after the one in progress)."""
        self._wake.set()

    def wait_past(self, position: int, timeout: float) -> bool:
        """Whether the read models have applied `position`, waiting for it at most
        `timeout` seconds while the thread runs."""
        with self._reached:
            if self._position >= position:
                return True
        if not self.running:
            return False
        self.wake()
        with self._reached:
            return self._reached.wait_for(
                lambda: self._position >= position or self._stopping.is_set(), timeout
            ) and self._position >= position

    def run_pass(self) -> int:
        """Catch up if the read models are behind; the position they reached."""
        head = self.ledger.source.head()
        position = self.ledger.projection_position()
        if position < head:
            self.ledger.catch_up()
            position = self.ledger.projection_position()
        with self._reached:
            self._position = max(self._position, position)
            self._reached.notify_all()
        return position

    def _run(self) -> None:
        while not self._stopping.is_set():
            self._wake.clear()
            try:
                self.run_pass()
            except Exception:  # noqa: BLE001 - the next pass retries (a catch-up is atomic)
                log.exception("projector: catching the read models up failed; retrying")
                self._stopping.wait(self.retry)
                continue
            self._wake.wait(self.every)
