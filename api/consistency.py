"""What reads and writes of the API and dashboard can count on.

Reads take no lock and project nothing: they read the read models (kept current by
the `runtime.projector.Projector` beside the server) and the event log, and list
endpoints say how far behind the read models are (`lag`, the `X-Ledger-Lag`
header). Writes go through `Writes`: one at a time in this process (the event
store has one writer at a time anyway, and the ledger's aggregate caches hand a
command its aggregates alone), and when the outermost write block ends the
projector is woken and the request waits, at most `wait` seconds, until the read
models have applied what the block recorded: a client that reads right after its
write sees it.
"""

from __future__ import annotations

import threading
from types import TracebackType

from runtime.ledger import Ledger
from runtime.projector import Projector

__all__ = ["LAG_HEADER", "READ_YOUR_WRITES", "Writes", "lag", "lag_headers"]

#: the response header of list endpoints: events recorded and not yet in the read models
LAG_HEADER = "X-Ledger-Lag"
#: seconds a write waits for the read models to apply it before it is answered anyway
READ_YOUR_WRITES = 5.0


def lag(ledger: Ledger) -> tuple[int, int]:
    """(the event log's head, how many events the read models have still to apply)."""
    head = ledger.source.head()
    return head, max(0, head - ledger.projection_position())


def lag_headers(ledger: Ledger) -> dict[str, str]:
    return {LAG_HEADER: str(lag(ledger)[1])}


class Writes:
    """`with writes:` around what records events; re-entrant, and only the outermost
    block waits for the read models (after the lock is released)."""

    def __init__(self, ledger: Ledger, projector: Projector,
                 wait: float = READ_YOUR_WRITES) -> None:
        self.ledger = ledger
        self.projector = projector
        self.wait = wait
        #: the lock alone: for a router that needs no read-your-writes (the bot's)
        self.lock = threading.RLock()
        self._depth = threading.local()

    def __enter__(self) -> Writes:
        self.lock.acquire()
        self._depth.value = getattr(self._depth, "value", 0) + 1
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self._depth.value -= 1
        outermost = self._depth.value == 0
        self.lock.release()
        if outermost:
            self.settle()

    def settle(self) -> bool:
        """Wait until the read models have applied everything recorded so far (a
        refused command recorded nothing: that returns at once)."""
        return self.projector.wait_past(self.ledger.source.head(), self.wait)
