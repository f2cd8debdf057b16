"""Reading the event store's notification log as envelopes, in order.

The catch-up read is the hot path of every projection and of the relay, so
it does not go through the library's `select_notifications` (a dict row and
a `Notification` object per event, bytea sent as hex text): one SQL query
per batch fetches plain tuples — binary protocol on PostgreSQL — and
`from_stored_rows` decodes the whole batch at once.

A long catch-up (`batches`: rebuilds, the embedded runner far behind) reads
ahead: a worker thread fetches the next batch while the caller decodes and
applies the current one.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Generator
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Protocol

from eventsourcing.persistence import ApplicationRecorder

from domain.envelope import Envelope, StoredRow, from_stored_rows
from eventstore.base import Backend


class EventSource(Protocol):
    def read(self, after: int, limit: int) -> list[Envelope]: ...

    def head(self) -> int: ...


class NotificationLogSource:
    """Envelopes from an eventsourcing application recorder, read by its backend's adapter.

    The PostgreSQL recorder serialises inserts with a table lock, so a
    notification id never commits after a higher one: reading "after N"
    cannot skip a late commit.
    """

    def __init__(self, recorder: ApplicationRecorder, backend: Backend) -> None:
        self.recorder = recorder
        self.backend = backend
        self._select: Callable[[Any, int, int], list[StoredRow]] = backend.notification_rows
        self._canonical = backend.canonical_ids

    def read(self, after: int, limit: int) -> list[Envelope]:
        return from_stored_rows(self._select(self.recorder, after, limit), self._canonical)

    def read_types(self, after: int, limit: int, event_types: Collection[str]) -> list[Envelope]:
        """`read`, keeping only the envelopes whose event type is in `event_types`: the
        other rows are dropped by their topic before anything is decoded (decoding is
        most of a read's time, and a few types in a window of thousands are cheap)."""
        return self.read_where(after, limit, lambda _, event_type: event_type in event_types)

    def read_where(self, after: int, limit: int, keep: Callable[[str, str], bool]
                   ) -> list[Envelope]:
        """`read`, keeping only the rows for which `keep(stream id, event type)` holds,
        decided before anything is decoded."""
        # the window's heads, then the states of the rows kept only (a window of
        # thousands of which a few are kept: their states were most of the read)
        heads = self.backend.notification_heads(self.recorder, after, limit)
        kept = [row[0] for row in heads if keep(str(row[1]), row[2].split(":", 1)[-1])]
        return from_stored_rows(self.backend.rows_at(self.recorder, kept) if kept else [],
                                self._canonical)

    def head(self) -> int:
        return self.recorder.max_notification_id() or 0

    def discard_broken(self) -> None:
        """After a failed read: drop the connections a server restart closed."""
        self.backend.discard_broken(self.recorder)

    def batches(self, after: int, limit: int) -> Generator[list[Envelope], None, None]:
        """`read` batch after batch until a short one (yielded too, even if empty).

        On PostgreSQL, once a first batch (read in the caller's thread) is full, a
        worker thread reads ahead: it fetches batch n+1 while the caller decodes and
        works on batch n (decoding stays in the caller's thread: two threads of
        Python work would only take turns with the GIL, and the fetch's waiting for
        the server is what can overlap).
        """
        if not self.backend.reads_ahead:  # in-process SQLite: nothing to overlap
            yield from _one_after_another(self, after, limit)  # (a thread: 10-25 % slower)
            return
        rows = self._select(self.recorder, after, limit)
        if len(rows) < limit:  # the usual live catch-up: one short batch, no thread
            yield from_stored_rows(rows, self._canonical)
            return
        with ThreadPoolExecutor(1, thread_name_prefix="read-ahead") as pool:
            while True:
                ahead = pool.submit(self._select, self.recorder, rows[-1][0], limit)
                yield from_stored_rows(rows, self._canonical)
                rows = ahead.result()
                if len(rows) < limit:
                    yield from_stored_rows(rows, self._canonical)
                    return


def batches(source: EventSource, after: int, limit: int) -> Generator[list[Envelope], None, None]:
    """Batches of `limit` envelopes after `after` until a short one (yielded too).

    Reads ahead when the source can (`NotificationLogSource.batches`), else one
    `read` after the other.
    """
    if isinstance(source, NotificationLogSource):
        yield from source.batches(after, limit)
    else:
        yield from _one_after_another(source, after, limit)


def _one_after_another(source: EventSource, after: int,
                       limit: int) -> Generator[list[Envelope], None, None]:
    while True:
        envelopes = source.read(after, limit)
        yield envelopes
        if len(envelopes) < limit:
            return
        after = envelopes[-1].position
