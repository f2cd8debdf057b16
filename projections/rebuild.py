"""Rebuilding read models from position 0, and proving a rebuild equals the live ones."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from projections import checkpoints
from projections.checkpoints import Checkpoint, LinkAt, Report
from projections.db import Database
from projections.framework import Projection, Table, drop_all, table_rows
from projections.runner import ProjectionRunner
from projections.search import index_faults
from projections.source import EventSource

SCRATCH = "scratch_"
#: the tables `verify` rebuilds from a checkpoint into
FROM_CHECKPOINT = "checkpoint_"
#: events per transaction when replaying from 0: nobody waits for a rebuild's rows to
#: show up, so bigger batches (fewer commits, prefetches and upserts: a stream's row is
#: written once per transaction however many of its events it holds) win. Read in
#: pieces of `runner.READ_SIZE`; ~1.8 kB per envelope in memory
REBUILD_BATCH = 20_000
Factory = Callable[[str], Sequence[Projection]]
Progress = Callable[[int, int], None]


@dataclass(frozen=True)
class TableComparison:
    table: str
    live_rows: int
    rebuilt_rows: int
    differing: int
    #: the keys of the first differing rows (`SHOWN` at most)
    keys: tuple[str, ...] = ()

    @property
    def equal(self) -> bool:
        return self.differing == 0 and self.live_rows == self.rebuilt_rows


def rebuild(source: EventSource, db: Database, factory: Factory,
            progress: Progress | None = None) -> int:
    """Drop the live read models and rebuild them from position 0."""
    projections = factory("")
    drop_all(db, projections)
    return ProjectionRunner(source, db, projections, REBUILD_BATCH).catch_up(progress)


@dataclass(frozen=True)
class Rebuilt:
    """What `rebuild_from_checkpoint` did: the checkpoint it started from (None: from
    position 0) and the events it replayed after it."""

    checkpoint: Checkpoint | None
    replayed: int


def rebuild_from_checkpoint(source: EventSource, db: Database, factory: Factory,
                            link_at: LinkAt, report: Report, progress: Progress | None = None,
                            prefix: str = "") -> Rebuilt:
    """Rebuild the read models (the live ones; under `prefix`, scratch ones) from the
    newest usable checkpoint (each refused or ignored one reported in one line),
    replaying only the events after it; from position 0 when there is none."""
    projections = factory(prefix)
    usable = checkpoints.latest_usable(db, projections, link_at, report)
    if usable is None:
        drop_all(db, projections)
        return Rebuilt(None, ProjectionRunner(source, db, projections,
                                              REBUILD_BATCH).catch_up(progress))
    point, tables = usable
    checkpoints.restore(db, projections, point.position, tables)
    replayed = ProjectionRunner(source, db, projections, REBUILD_BATCH).catch_up(progress)
    return Rebuilt(point, replayed)


def verify(source: EventSource, db: Database, factory: Factory,
           progress: Progress | None = None, link_at: LinkAt | None = None,
           report: Report | None = None) -> list[TableComparison]:
    """Catch the live models up, replay from position 0 into scratch tables, compare
    row by row. With `link_at`, the rebuild from the newest usable checkpoint is made in
    other scratch tables and compared with the replay too (its tables named
    "<table> (from checkpoint N)"). The live models are left as they are."""
    live = ProjectionRunner(source, db, factory(""))
    live.catch_up()
    scratch = factory(SCRATCH)
    drop_all(db, scratch)
    ProjectionRunner(source, db, scratch, REBUILD_BATCH).catch_up(progress)
    try:
        tables = [t for p in scratch for t in p.tables]
        found = ([_compare(db, table, "", SCRATCH) for table in tables]
                 + [_check_index(db, table) for table in tables if table.search])
        if link_at is not None:
            found += _verify_checkpoint(source, db, factory, link_at, report, tables)
        return found
    finally:
        drop_all(db, scratch)


def _verify_checkpoint(source: EventSource, db: Database, factory: Factory, link_at: LinkAt,
                       report: Report | None, tables: list[Table]) -> list[TableComparison]:
    """The rebuild from the newest usable checkpoint (in `FROM_CHECKPOINT` tables)
    compared with the replay from 0 (in `SCRATCH` tables)."""
    try:
        done = rebuild_from_checkpoint(source, db, factory, link_at,
                                       report or (lambda _: None), prefix=FROM_CHECKPOINT)
        if done.checkpoint is None:
            return []
        label = f"from checkpoint {done.checkpoint.id}"
        return [replace(_compare(db, table, FROM_CHECKPOINT, SCRATCH),
                        table=f"{table.name} ({label})") for table in tables]
    finally:
        drop_all(db, factory(FROM_CHECKPOINT))


def _check_index(db: Database, table: Table) -> TableComparison:
    """A full-text index is its table's rows, indexed: the table is compared with the
    rebuild like any other; the live index must then agree with the live table."""
    with db.transaction() as tx:
        rows = int(tx.execute(f"SELECT count(*) AS n FROM {table.name}")[0]["n"])
        fault = index_faults(tx, db.dialect, table.name)
    return TableComparison(f"{table.name} search index", rows, rows, 0 if fault is None else 1)


def _compare(db: Database, table: Table, prefix: str, replayed: str) -> TableComparison:
    """The rows of `table` under `prefix` against those of the replay (`replayed`)."""
    live = {_key(table, row): row for row in table_rows(db, table, prefix)}
    rebuilt = {_key(table, row): row for row in table_rows(db, table, replayed)}
    keys = sorted((k for k in live.keys() | rebuilt.keys() if live.get(k) != rebuilt.get(k)),
                  key=repr)
    return TableComparison(table.name, len(live), len(rebuilt), len(keys),
                           tuple("/".join(map(str, k)) for k in keys[:SHOWN]))


def _key(table: Table, row: dict[str, object]) -> tuple[object, ...]:
    return tuple(row[k] for k in table.key)


#: differing rows named per table at most
SHOWN = 5
