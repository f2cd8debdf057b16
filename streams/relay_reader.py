"""Reading the relay's next batch while the current one is flushed.

While a full batch waits for the broker's acknowledgements, `Relay.step` has the
next batch read and encoded ahead, in one of two ways:

- `ThreadReadAhead`: a helper thread in the relay's process. Reading and encoding
  are ~11 µs an event of Python (decoding the stored events, writing the wire
  JSON), and kafka-python's sending is Python too (`send`, its sender thread):
  under the GIL they take turns, so the read-ahead's time adds to the sending's.
  With the read and encoding taken away entirely, the relay sent 1.3× the bare
  producer's messages a second (it names each message's partition itself); with
  them in a thread, 0.8–0.9×.
- `ProcessReader`: a child process with its own connection to the event store,
  which answers "the batch after N" with the batch encoded: its positions and
  messages, which cost the relay's process ~0.15 µs a message to unpickle. The
  relay's process is left with the sending. `crawl-ledger relay` uses it.

Either way a read-ahead only saves the read's time: the publishable prefix and the
gaps are still decided by the relay at the acknowledged position, and a batch read
ahead from another position is dropped. A read that failed is read again in the
relay's thread. A child that died, hung (no answer in `timeout` seconds) or could
not open the event store is not restarted: the relay goes on with the thread.
"""

from __future__ import annotations

import logging
import multiprocessing
import signal
import threading
from collections.abc import Callable
from contextlib import AbstractContextManager
from multiprocessing.connection import Connection
from types import TracebackType
from typing import Protocol

from projections.source import EventSource
from streams.topics import Topics
from streams.wire import Batch, encode_batch

log = logging.getLogger("streams.relay")

#: opens the event store's notification log in the child (picklable: a module-level
#: function or a `functools.partial` of one, e.g. `ledger.bootstrap.event_source`)
SourceOpener = Callable[[], AbstractContextManager[EventSource]]


class Pending(Protocol):
    """A batch being read ahead."""

    #: the position it is read after
    after: int

    def result(self) -> Batch | None:
        """The batch, or None when it could not be read (the relay reads it itself)."""


class ThreadReadAhead:
    """`read(after)` in a helper thread."""

    def __init__(self, read: Callable[[int], Batch], after: int) -> None:
        self.after = after
        self._read = read
        self._batch: Batch | None = None
        self._thread = threading.Thread(target=self._run, name="relay-read-ahead", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            self._batch = self._read(self.after)
        except Exception:  # noqa: BLE001 - the relay's own read reports it
            log.debug("relay: reading ahead failed; reading again", exc_info=True)

    def result(self) -> Batch | None:
        self._thread.join()
        return self._batch


class ProcessReader:
    """A child process that reads and encodes batches for one relay.

    One request at a time: a new `read_ahead` first collects (and drops) the
    answer to the last one if nobody took it. Use it as a context manager, or
    `close` it: the child is asked to stop, then terminated.
    """

    def __init__(self, open_source: SourceOpener, timeout: float = 60.0) -> None:
        self.timeout = timeout
        context = multiprocessing.get_context("spawn")  # no fork of a threaded process
        self._conn, child = context.Pipe()
        self._process = context.Process(target=_serve, name="relay-reader", daemon=True,
                                        args=(child, open_source))
        self._process.start()
        child.close()
        self._waiting = True  # its first message: the store is open, or why it is not
        self._started = False
        self._broken = False
        #: batches the child read and encoded that the relay took
        self.answered = 0

    def wait_ready(self) -> bool:
        """Wait until the child has opened the event store; False if it could not."""
        self._collect()
        return self.working

    @property
    def pid(self) -> int | None:
        return self._process.pid

    @property
    def working(self) -> bool:
        """False once the child failed: the relay then reads ahead in a thread."""
        return not self._broken

    def read_ahead(self, after: int, limit: int, topics: Topics,
                   ledger_id: str | None) -> _ProcessPending | None:
        """Ask the child for the batch after `after`, encoded as the relay's own reads are
        (`encode_batch` with its topics and ledger id); None if the child is gone, or
        still starting (its interpreter and its connection take about a second)."""
        if self._broken or (not self._started and not self._conn.poll(0)):
            return None
        self._collect()  # an answer nobody took
        if self._broken:
            return None
        try:
            self._conn.send((after, limit, topics, ledger_id))
        except (OSError, ValueError) as error:
            self._fail(f"the reader process is gone ({error})")
            return None
        self._waiting = True
        return _ProcessPending(self, after)

    def _collect(self) -> Batch | None:
        if not self._waiting:
            return None
        self._waiting = False
        try:
            if not self._conn.poll(self.timeout):
                self._fail(f"the reader process gave no answer in {self.timeout:.0f} s")
                return None
            answer: Batch | str | bool = self._conn.recv()
        except (OSError, EOFError) as error:
            self._fail(f"the reader process is gone ({error or type(error).__name__})")
            return None
        if not self._started:  # the first message
            self._started = True
            if answer is not True:
                self._fail(f"the reader process: {answer}")
            return None
        if isinstance(answer, str):  # its read failed
            log.warning("relay: the reader process: %s; reading in the relay's thread", answer)
            return None
        assert not isinstance(answer, bool)
        self.answered += 1
        return answer

    def _fail(self, why: str) -> None:
        log.warning("relay: %s; reading ahead in a thread from now on", why)
        self._broken = True
        self._stop(0)

    def close(self) -> None:
        if not self._broken:
            try:
                self._conn.send(None)
            except (OSError, ValueError):
                pass
        self._broken = True
        self._stop(5)

    def _stop(self, grace: float) -> None:
        self._process.join(grace)
        if self._process.is_alive():
            self._process.terminate()
            self._process.join(5)
        self._conn.close()

    def __enter__(self) -> ProcessReader:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self.close()


class _ProcessPending:
    def __init__(self, reader: ProcessReader, after: int) -> None:
        self.after = after
        self._reader = reader

    def result(self) -> Batch | None:
        return self._reader._collect()


def _serve(conn: Connection, open_source: SourceOpener) -> None:
    """The child: answer (after, limit, topics, ledger id) with the encoded batch; None
    stops it."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C stops the relay, which stops us
    try:
        opened = open_source()
        source = opened.__enter__()
    except Exception as error:  # noqa: BLE001 - reported to the relay, which goes on alone
        conn.send(f"cannot open the event store: {one_line(error)}")
        return
    try:
        conn.send(True)
        while True:
            try:
                request = conn.recv()
            except (EOFError, OSError):  # the relay is gone
                return
            if request is None:
                return
            after, limit, topics, ledger_id = request
            answer: Batch | str
            try:
                answer = encode_batch(source.read(after, limit), topics, ledger_id)
            except Exception as error:  # noqa: BLE001 - the relay reads it again itself
                answer = f"reading after {after}: {one_line(error)}"
                discard_broken(source)
            try:
                conn.send(answer)
            except OSError:  # the relay is gone
                return
    finally:
        opened.__exit__(None, None, None)


def discard_broken(source: EventSource) -> None:
    """After a failed read, drop the connections a server restart closed (a
    `NotificationLogSource`'s; other sources have none)."""
    discard = getattr(source, "discard_broken", None)
    if discard is not None:
        try:
            discard()
        except Exception:  # noqa: BLE001 - the server is still away: the next read tells
            log.debug("relay: checking the store's connections failed", exc_info=True)


def one_line(error: BaseException) -> str:
    """An error's first line (at most 200 characters), or its type's name."""
    return (str(error).strip().splitlines() or [type(error).__name__])[0][:200]
