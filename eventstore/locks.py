"""One runner per event store: an exclusive lock on the store itself, naming its holder.

Two embedded runners on one store would expire each other's leases at start and
lose results, whatever data directories they use. The lock lives with the store:

- SQLite: an `flock` on the database file (independent of SQLite's own byte-range
  locks), the holder written beside it;
- PostgreSQL: a session advisory lock keyed by database and schema, held on a
  dedicated connection, the holder in a one-row table of the schema.

Either is released when the holding process ends, however it ends.
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

__all__ = ["Holder", "StoreLocked", "postgres_lock", "postgres_schema_lock", "sqlite_lock"]


class StoreLocked(Exception):
    """Another runner holds this event store; the message names it."""


@dataclass(frozen=True)
class Holder:
    host: str
    pid: int
    since: str

    @classmethod
    def this_process(cls) -> Holder:
        return cls(socket.gethostname(), os.getpid(),
                   datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"))

    def describe(self) -> str:
        return f"host {self.host}, pid {self.pid}, since {self.since}"


def _refused(store: str, holder: dict[str, Any] | None) -> StoreLocked:
    named = Holder(**holder).describe() if holder else "holder unknown"
    return StoreLocked(f"another crawl-ledger runner holds the event store {store} ({named})")


@contextmanager
def sqlite_lock(path: Path, store: str, holder: Holder) -> Iterator[Holder]:
    path.parent.mkdir(parents=True, exist_ok=True)
    info = path.with_name(path.name + ".runner")
    with open(path, "ab") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise _refused(store, _read_json(info)) from None
        try:
            info.write_text(json.dumps(asdict(holder)))
            yield holder
        finally:
            info.unlink(missing_ok=True)
            fcntl.flock(handle, fcntl.LOCK_UN)


def _read_json(path: Path) -> dict[str, Any] | None:
    try:
        found = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return found if isinstance(found, dict) else None


@contextmanager
def postgres_lock(conninfo: str, dbname: str, schema: str, store: str,
                  holder: Holder) -> Iterator[Holder]:
    import psycopg
    from psycopg.sql import SQL, Identifier

    table = SQL("{}.{}").format(Identifier(schema), Identifier("runner_lock"))
    with psycopg.connect(conninfo, autocommit=True) as conn:
        conn.execute(SQL("CREATE SCHEMA IF NOT EXISTS {}").format(Identifier(schema)))
        conn.execute(SQL("CREATE TABLE IF NOT EXISTS {} (only_row boolean PRIMARY KEY DEFAULT true,"
                         " host text, pid integer, since text)").format(table))
        key = f"crawl-ledger runner {dbname}.{schema}"
        row = conn.execute("SELECT pg_try_advisory_lock(hashtextextended(%s, 0))", (key,)).fetchone()
        if not row or not row[0]:
            found = conn.execute(SQL("SELECT host, pid, since FROM {}").format(table)).fetchone()
            raise _refused(store, dict(zip(("host", "pid", "since"), found)) if found else None)
        conn.execute(SQL("INSERT INTO {} (only_row, host, pid, since) VALUES (true, %s, %s, %s) "
                         "ON CONFLICT (only_row) DO UPDATE SET host = excluded.host, "
                         "pid = excluded.pid, since = excluded.since").format(table),
                     (holder.host, holder.pid, holder.since))
        try:
            yield holder
        finally:
            # Closing the connection would free the lock too, but only once the server's
            # backend has finished exiting, after the client has moved on: a runner
            # started right after this one stopped could still find it held.
            with suppress(psycopg.Error):  # a lost session has let go anyway
                conn.execute("SELECT pg_advisory_unlock(hashtextextended(%s, 0))", (key,))


@contextmanager
def postgres_schema_lock(conninfo: str, dbname: str, schema: str) -> Iterator[None]:
    """Create `schema` and hold a session advisory lock while the caller creates its
    tables: `CREATE … IF NOT EXISTS` is not safe against a concurrent creator in
    PostgreSQL (the loser fails on the catalog's unique index), so processes started
    together on one schema create it one after the other; for the later ones every
    statement is a no-op. Waiting processes block on the lock, not on a retry loop."""
    import psycopg
    from psycopg.sql import SQL, Identifier

    key = f"crawl-ledger schema {dbname}.{schema}"
    with psycopg.connect(conninfo, autocommit=True) as conn:
        conn.execute("SELECT pg_advisory_lock(hashtextextended(%s, 0))", (key,))
        try:
            conn.execute(SQL("CREATE SCHEMA IF NOT EXISTS {}").format(Identifier(schema)))
            yield
        finally:
            with suppress(psycopg.Error):  # a lost session has let go anyway
                conn.execute("SELECT pg_advisory_unlock(hashtextextended(%s, 0))", (key,))
