"""The library's SQLite persistence with the ledger's snapshot table.

`SQLiteBackend.library_env` names `LedgerSQLiteFactory` as the persistence module: the
library's factory, recorders and connections (SQLite's default page cache, ~2 MiB a
connection: a 500-product result dirties ~400 pages of 4 KiB, which a 512 KiB cache
spills mid-transaction, its inserts then taking 1.5× as long; the read models'
connections keep 512 KiB: `projections/db.py`), with one change: the snapshots table is
created as an ordinary (rowid) table with its primary key as an index
(`SnapshotRecorder`), not `WITHOUT ROWID` as the library creates it. A `WITHOUT ROWID`
table keeps each row in its key's B-tree, which suits rows under ~1/20 of a page
(SQLite's guidance); a product's snapshot is over 1 kB, and each lands at a random key,
splitting and rewriting full leaf pages. In a rowid table the row is appended and only
the ~50-byte key goes to a random place: inserting a 1.2 kB product snapshot takes ~9 µs
there, ~30 µs in the library's table. The columns, the key and every query are the
library's. A database whose snapshots table the library created keeps it as it is
(`CREATE TABLE IF NOT EXISTS`): both work.
"""

from __future__ import annotations

from eventsourcing.sqlite import SQLiteAggregateRecorder, SQLiteFactory

__all__ = ["LedgerSQLiteFactory", "SnapshotRecorder", "TOPIC"]

TOPIC = "eventstore.sqlite_factory:LedgerSQLiteFactory"


class SnapshotRecorder(SQLiteAggregateRecorder):
    """The library's aggregate recorder (the factory makes one only for snapshots), its
    table a rowid table: see the module's docstring."""

    def construct_create_table_statements(self) -> list[str]:
        return [statement.replace(" WITHOUT ROWID", "")
                for statement in super().construct_create_table_statements()]


class LedgerSQLiteFactory(SQLiteFactory):
    aggregate_recorder_class = SnapshotRecorder
