"""Rebuilding read models from position 0, and proving a rebuild equals the live ones."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from projections.db import Database
from projections.framework import Projection, Table, drop_all, table_rows
from projections.runner import ProjectionRunner
from projections.search import index_faults
from projections.source import EventSource

SCRATCH = "scratch_"
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

    @property
    def equal(self) -> bool:
        return self.differing == 0 and self.live_rows == self.rebuilt_rows


def rebuild(source: EventSource, db: Database, factory: Factory,
            progress: Progress | None = None) -> int:
    """Drop the live read models and rebuild them from position 0."""
    projections = factory("")
    drop_all(db, projections)
    return ProjectionRunner(source, db, projections, REBUILD_BATCH).catch_up(progress)


def verify(source: EventSource, db: Database, factory: Factory,
           progress: Progress | None = None) -> list[TableComparison]:
    """Catch the live models up, rebuild into scratch tables, compare row by row."""
    live = ProjectionRunner(source, db, factory(""))
    live.catch_up()
    scratch = factory(SCRATCH)
    drop_all(db, scratch)
    ProjectionRunner(source, db, scratch, REBUILD_BATCH).catch_up(progress)
    try:
        tables = [t for p in scratch for t in p.tables]
        return ([_compare(db, table, SCRATCH) for table in tables]
                + [_check_index(db, table) for table in tables if table.search])
    finally:
        drop_all(db, scratch)


def _check_index(db: Database, table: Table) -> TableComparison:
    """A full-text index is its table's rows, indexed: the table is compared with the
    rebuild like any other; the live index must then agree with the live table."""
    with db.transaction() as tx:
        rows = int(tx.execute(f"SELECT count(*) AS n FROM {table.name}")[0]["n"])
        fault = index_faults(tx, db.dialect, table.name)
    return TableComparison(f"{table.name} search index", rows, rows, 0 if fault is None else 1)


def _compare(db: Database, table: Table, prefix: str) -> TableComparison:
    live = table_rows(db, table, "")
    rebuilt = table_rows(db, table, prefix)
    differing = sum(1 for a, b in zip(live, rebuilt) if a != b) + abs(len(live) - len(rebuilt))
    return TableComparison(table.name, len(live), len(rebuilt), differing)
