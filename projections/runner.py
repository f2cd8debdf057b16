"""Applying the event log to read models in batches, one transaction per batch."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from domain.envelope import Envelope
from domain.gcpause import gc_paused
from projections.db import Database
from projections.framework import MOVE_POSITION, Projection, create_all, positions
from projections.source import EventSource, batches


def apply_envelopes(db: Database, projections: Sequence[Projection],
                    envelopes: Sequence[Envelope]) -> int | None:
    """Apply one batch to every projection in a single transaction (with positions: read
    in one query, moved in one statement); the lowest position they reached, None for
    an empty batch."""
    if not envelopes:
        return None
    last = envelopes[-1].position
    with gc_paused(), db.transaction() as tx:
        known = positions(tx, projections)
        for projection in projections:
            projection.apply_after(tx, envelopes, known[projection.tracking_name])
        moved = [(name, last) for name, at in known.items() if last > at]
        if moved:
            tx.executemany(MOVE_POSITION, moved)
    return min((max(at, last) for at in known.values()), default=last)


class ProjectionRunner:
    """Catches a set of projections up with an event source (the embedded driver)."""

    def __init__(self, source: EventSource, db: Database, projections: Sequence[Projection],
                 batch_size: int = 1000) -> None:
        self.source = source
        self.db = db
        self.projections = list(projections)
        self.batch_size = batch_size
        #: the lowest position the projections reached in this runner's last catch-up
        #: that applied anything (None before one): what `lowest_position` would read
        self.reached: int | None = None
        create_all(db, self.projections)

    def position(self) -> int:
        """The lowest position any of the projections has reached."""
        with self.db.transaction() as tx:
            return min(positions(tx, self.projections).values(), default=0)

    def run_batch(self) -> int:
        envelopes = self.source.read(self.position(), self.batch_size)
        apply_envelopes(self.db, self.projections, envelopes)
        return len(envelopes)

    def catch_up(self, progress: Callable[[int, int], None] | None = None) -> int:
        """Apply everything recorded so far; returns the number of events read.

        Reads of at most `READ_SIZE` come from `batches` (read ahead while this
        thread applies); as many whole reads as fit in `batch_size` make one
        transaction. Each transaction moves every projection to its last
        position; should the tracked position say otherwise (another writer),
        reading restarts from there.
        """
        total = 0
        # the head is only for the progress report: a catch-up without one (the
        # embedded runner's, many a second) does not ask for it
        head = self.source.head() if progress is not None else 0
        after = self.position()
        size = min(self.batch_size, READ_SIZE)
        while True:
            stream = batches(self.source, after, size)
            try:
                pending: list[Envelope] = []
                for envelopes in stream:
                    pending += envelopes
                    if len(envelopes) == size and len(pending) + size <= self.batch_size:
                        continue  # another read fits in this transaction
                    moved = apply_envelopes(self.db, self.projections, pending)
                    reached = after if moved is None else moved
                    if moved is not None:
                        self.reached = moved
                    total += len(pending)
                    if progress is not None:
                        progress(reached, head)
                    if len(envelopes) < size:
                        return total
                    if reached != pending[-1].position:
                        after = reached
                        break
                    pending = []
                else:
                    return total
            finally:
                stream.close()


#: the most envelopes one read fetches and decodes (a batch is read in such pieces)
READ_SIZE = 5000
