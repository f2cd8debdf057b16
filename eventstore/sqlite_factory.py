"""The library's SQLite persistence with the ledger's connection settings and snapshot table.

`SQLiteBackend.library_env` names `LedgerSQLiteFactory` as the persistence module:
the library's factory and recorders, with two changes.

- Its connections keep a smaller page cache (`CACHE_KIB`). SQLite's default, 2 MiB a
  connection, stayed resident in every connection of a runner (recording, catch-up
  reads, set-up) and was ~4 MiB of its peak RSS; the operating system's file cache
  holds the pages anyway.
- The snapshots table is created as an ordinary (rowid) table with its primary key
  as an index (`SnapshotRecorder`), not `WITHOUT ROWID` as the library creates
  it. A `WITHOUT ROWID` table keeps each row in its key's B-tree, which suits rows
  under ~1/20 of a page (SQLite's guidance); a product's snapshot is over 1 kB,
  and each lands at a random key, splitting and rewriting full leaf pages. In a
  rowid table the row is appended and only the ~50-byte key goes to a random place:
  inserting a 1.2 kB product snapshot took ~30 µs, ~9 µs after. The columns, the
  key and every query are the library's. A database whose snapshots table was
  created before keeps it as it is (`CREATE TABLE IF NOT EXISTS`): both work.
"""

from __future__ import annotations

from typing import Any

from eventsourcing.sqlite import (
    SQLiteAggregateRecorder,
    SQLiteConnection,
    SQLiteConnectionPool,
    SQLiteFactory,
)

__all__ = ["CACHE_KIB", "LedgerSQLiteFactory", "SnapshotRecorder", "TOPIC"]

#: SQLite page cache of each connection (KiB)
CACHE_KIB = 512
TOPIC = "eventstore.sqlite_factory:LedgerSQLiteFactory"


class _Pool(SQLiteConnectionPool):
    def _create_connection(self) -> SQLiteConnection:
        connection = super()._create_connection()
        connection._sqlite_conn.execute(f"PRAGMA cache_size = -{CACHE_KIB}")
        return connection


class SnapshotRecorder(SQLiteAggregateRecorder):
    """The library's aggregate recorder (the factory makes one only for snapshots), its
    table a rowid table: see the module's docstring."""

    def construct_create_table_statements(self) -> list[str]:
        return [statement.replace(" WITHOUT ROWID", "")
                for statement in super().construct_create_table_statements()]


class LedgerSQLiteFactory(SQLiteFactory):
    aggregate_recorder_class = SnapshotRecorder

    def __init__(self, env: Any) -> None:
        super().__init__(env)
        library = self.datastore.pool  # no connection made yet: replaced before first use
        self.datastore.pool = _Pool(db_name=library.db_name, lock_timeout=library.lock_timeout)
        library.close()
