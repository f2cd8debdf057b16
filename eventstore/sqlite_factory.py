"""The library's SQLite persistence with the ledger's connection settings.

`SQLiteBackend.library_env` names `LedgerSQLiteFactory` as the persistence module:
the library's factory, recorders and tables unchanged, whose connections keep a
smaller page cache (`CACHE_KIB`). SQLite's default, 2 MiB a connection, stayed
resident in every connection of a runner (recording, catch-up reads, set-up) and
was ~4 MiB of its peak RSS; the operating system's file cache holds the pages anyway.
"""

from __future__ import annotations

from typing import Any

from eventsourcing.sqlite import SQLiteConnection, SQLiteConnectionPool, SQLiteFactory

__all__ = ["CACHE_KIB", "LedgerSQLiteFactory", "TOPIC"]

#: SQLite page cache of each connection (KiB)
CACHE_KIB = 512
TOPIC = "eventstore.sqlite_factory:LedgerSQLiteFactory"


class _Pool(SQLiteConnectionPool):
    def _create_connection(self) -> SQLiteConnection:
        connection = super()._create_connection()
        connection._sqlite_conn.execute(f"PRAGMA cache_size = -{CACHE_KIB}")
        return connection


class LedgerSQLiteFactory(SQLiteFactory):
    def __init__(self, env: Any) -> None:
        super().__init__(env)
        library = self.datastore.pool  # no connection made yet: replaced before first use
        self.datastore.pool = _Pool(db_name=library.db_name, lock_timeout=library.lock_timeout)
        library.close()
