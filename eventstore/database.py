"""The read-model database port and its two adapters (SQLite, PostgreSQL).

Projections and queries write portable SQL with `?` placeholders and
`INSERT … ON CONFLICT … DO UPDATE` (both engines speak it); the PostgreSQL
adapter rewrites the placeholders. Each adapter writes through one connection
guarded by a lock, so threads of the embedded runner can share it, and reads
(`query`) through a few read-only connections of their own (`Readers`): a read
neither waits for a write transaction (a catch-up) to end nor holds one up, since
SQLite in WAL mode and PostgreSQL both read a committed snapshot beside a writer.
A read sees every write committed before it started.
"""

from __future__ import annotations

import functools
import re
import sqlite3
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from eventstore.ddl import DOC, TYPES, table_ddl

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["TYPES", "Database", "PostgresDatabase", "Readers", "Row", "SQLiteDatabase", "Tx",
           "upsert_statement"]

Row = dict[str, Any]



class Tx(ABC):
    """An open transaction: run statements, read rows as dicts."""

    @abstractmethod
    def execute(self, sql: str, params: Sequence[Any] = ()) -> list[Row]: ...

    @abstractmethod
    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None: ...

    #: what a `SELECT` ends with to lock the rows it reads until the transaction ends
    #: (SQLite's writer holds the whole database already: nothing)
    row_lock: str = ""

    def upsert(self, table: str, key: Sequence[str], columns: dict[str, str],
               rows: Sequence[Sequence[Any]]) -> None:
        """Insert or replace many rows (values in `columns` order; keys unique)."""
        self.executemany(upsert_statement(table, key, columns), rows)

    def read_table(self, table: str, columns: dict[str, str], key: Sequence[str]) -> pa.Table:
        """The whole table (`columns` of it, typed) as an Arrow table, in key order."""
        return _read_table(self, table, columns, key)

    def write_table(self, table: str, columns: dict[str, str], data: pa.Table) -> None:
        """Insert every row of `data` (a `read_table` result) into an empty `table`."""
        names = list(columns)
        marks = ", ".join("?" for _ in names)
        sql = f"INSERT INTO {table} ({', '.join(names)}) VALUES ({marks})"
        for batch in data.select(names).to_batches(20_000):
            self.executemany(sql, list(zip(*(c.to_pylist() for c in batch.columns))))

    def load_table(self, ddl: Sequence[str], table: str, columns: dict[str, str],
                   data: pa.Table) -> None:
        """Create `table` (its `ddl`, from `table_ddl`; it must not exist) and fill it
        with `data` (a `read_table` result), in this transaction: a bulk load. SQLite:
        the statements, then the rows (its full-text triggers index each one)."""
        for statement in ddl:
            self.execute(statement)
        self.write_table(table, columns, data)

    @abstractmethod
    def commit_without_flush(self) -> None:
        """Let this transaction's commit return before it is durable (a crash may lose
        it, never part of it): for progress that is safe to redo."""


def _read_table(tx: Tx, table: str, columns: dict[str, str], key: Sequence[str]) -> pa.Table:
    from eventstore.arrow_rows import to_arrow

    rows = tx.execute(f"SELECT {', '.join(columns)} FROM {table} ORDER BY {', '.join(key)}")
    return to_arrow(rows, columns)


def upsert_statement(table: str, key: Sequence[str], columns: dict[str, str],
                     rows: int = 1) -> str:
    """`INSERT … VALUES (?, …)[, (?, …) …] ON CONFLICT (key) DO UPDATE` of `rows` rows
    (built once per table, key, columns and row count: a catch-up upserts into each
    table it touches, many times a second in the embedded runner)."""
    return _upsert_text(table, tuple(key), tuple(columns), rows)


@functools.lru_cache(maxsize=1024)
def _upsert_text(table: str, key: tuple[str, ...], names: tuple[str, ...], rows: int) -> str:
    updates = ", ".join(f"{c} = excluded.{c}" for c in names if c not in key)
    values = ", ".join([f"({', '.join('?' for _ in names)})"] * rows)
    return (f"INSERT INTO {table} ({', '.join(names)}) VALUES {values} "
            f"ON CONFLICT ({', '.join(key)}) DO UPDATE SET {updates}")


class Database(ABC):
    """A read-model database: `transaction()` commits on success, rolls back on error."""

    dialect: str
    #: the names of the read-model objects `framework.create_all` knows exist (so a
    #: process asks the catalogue once); emptied by `framework.drop_all`
    created: set[str]

    @abstractmethod
    @contextmanager
    def transaction(self) -> Iterator[Tx]: ...

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[Row]:
        """The rows of one statement, as committed when it started. Both adapters read
        on read-only connections of their own (a write is refused there); this default
        reads in a transaction of the writer's (an in-memory SQLite database's reads)."""
        with self.transaction() as tx:
            return tx.execute(sql, params)

    @contextmanager
    def snapshot(self) -> Iterator[Tx]:
        """A transaction whose reads all see one committed state (SQLite's write
        transaction does: nobody else writes while it is open)."""
        with self.transaction() as tx:
            yield tx

    def column_type(self, kind: str) -> str:
        return TYPES[self.dialect][kind]

    def table_ddl(self, name: str, columns: dict[str, str], key: Sequence[str],
                  indexes: Sequence[Sequence[str]] = (), search: Sequence[str] = ()) -> list[str]:
        """The statements creating a table on this engine (`eventstore.ddl.table_ddl`)."""
        return table_ddl(self.dialect, name, columns, key, indexes, search)

    @abstractmethod
    def table_names(self) -> set[str]: ...

    @abstractmethod
    def object_names(self) -> set[str]:
        """The names of the tables, indexes (and SQLite's triggers) in the database,
        and PostgreSQL's full-text columns as `table.column`: one query."""

    @abstractmethod
    def close(self) -> None: ...


class Readers:
    """Read-only connections opened on demand, at most `size` in use at once (a reader
    beyond waits for one to come back); one that failed is closed, not reused."""

    def __init__(self, connect: Callable[[], Any], usable: Callable[[Any], bool],
                 size: int = 4) -> None:
        self._connect = connect
        self._usable = usable
        self._slots = threading.BoundedSemaphore(size)
        self._lock = threading.Lock()
        self._idle: list[Any] = []
        self._closed = False

    @contextmanager
    def connection(self) -> Iterator[Any]:
        with self._slots:
            with self._lock:
                if self._closed:
                    raise RuntimeError("the read-model database is closed")
                conn = self._idle.pop() if self._idle else None
            conn = conn if conn is not None else self._connect()
            ok = False
            try:
                yield conn
                ok = True
            finally:
                with self._lock:
                    keep = ok and not self._closed and self._usable(conn)
                    if keep:
                        self._idle.append(conn)
                if not keep:
                    conn.close()

    def discard_idle(self) -> None:
        """Close the idle connections (the next readers open new ones)."""
        with self._lock:
            idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()

    def close(self) -> None:
        with self._lock:
            self._closed = True
        self.discard_idle()


class _SQLiteTx(Tx):
    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def commit_without_flush(self) -> None:
        pass  # WAL with `synchronous=NORMAL` commits without a flush already

    def execute(self, sql: str, params: Sequence[Any] = ()) -> list[Row]:
        cursor = self.conn.execute(sql, tuple(params))
        if cursor.description is None:
            return []
        names = [d[0] for d in cursor.description]
        return [dict(zip(names, row)) for row in cursor.fetchall()]

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        self.conn.executemany(sql, rows)

    def upsert(self, table: str, key: Sequence[str], columns: dict[str, str],
               rows: Sequence[Sequence[Any]]) -> None:
        """`Tx.upsert` with many rows a statement (`VALUES (…), (…), …`).

        A table with a full-text index (`projections.search`) keeps it by triggers,
        and FTS5 writes its pending terms out at the end of every statement: one
        statement a row made each new product's document cost ~90 µs instead of
        ~30 (and an update ~145 µs instead of ~45); plain tables gain a little too.
        The rows go in order, as `executemany` sends them. Statements hold 2ⁿ rows
        (at most `_ROWS_A_STATEMENT`, within SQLite's variable limit), so a table
        needs a handful of statement texts, all kept in the connection's cache."""
        if len(rows) < 2:
            super().upsert(table, key, columns, rows)
            return
        limit = self.conn.getlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER)
        start = 0
        for size in _pieces(len(rows), _ROWS_A_STATEMENT, limit // len(columns)):
            part = rows[start:start + size]
            start += size
            self.conn.execute(upsert_statement(table, key, columns, size),
                              [value for row in part for value in row])


#: the most rows one statement of `_SQLiteTx.upsert` inserts
_ROWS_A_STATEMENT = 128


def _pieces(count: int, most: int, fit: int) -> Iterator[int]:
    """`count` as a sum of powers of two, each at most `most` and `fit` (and at least 1):
    the largest first."""
    size = 1
    while size * 2 <= min(most, fit):
        size *= 2
    while count:
        while size > count:
            size //= 2
        yield size
        count -= size


class SQLiteDatabase(Database):
    """Read models in an SQLite file (embedded deployment)."""

    dialect = "sqlite"

    def __init__(self, path: str | Path) -> None:
        self.path = str(path)
        self.created: set[str] = set()
        self._lock = threading.RLock()
        self._conn = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None,
                                     timeout=30)
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute("PRAGMA synchronous=NORMAL")
        # 512 KiB instead of SQLite's 2 MiB: the file cache holds the pages anyway, and a
        # runner's peak RSS counts every connection's cache (the event store's keep the
        # default, for a result's ~400 dirty pages: eventstore.sqlite_factory)
        self._conn.execute("PRAGMA cache_size=-512")
        # an in-memory database is this connection's alone: its reads take the lock too
        self._readers = (None if self.path in ("", ":memory:") or self.path.startswith("file:")
                         else Readers(self._reader, lambda conn: True))

    def _reader(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None,
                               timeout=30)
        conn.execute("PRAGMA query_only=ON")
        conn.execute("PRAGMA cache_size=-512")
        return conn

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[Row]:
        if self._readers is None:
            return super().query(sql, params)
        with self._readers.connection() as conn:  # autocommit: the statement's own snapshot
            return _SQLiteTx(conn).execute(sql, params)

    @contextmanager
    def transaction(self) -> Iterator[Tx]:
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                yield _SQLiteTx(self._conn)
                self._conn.execute("COMMIT")
            except BaseException:
                if self._conn.in_transaction:  # a failed COMMIT leaves it open too
                    self._conn.execute("ROLLBACK")
                raise

    def table_names(self) -> set[str]:
        rows = self.query("SELECT name FROM sqlite_master WHERE type = 'table'")
        return {r["name"] for r in rows}

    def object_names(self) -> set[str]:
        return {r["name"] for r in self.query("SELECT name FROM sqlite_master")}

    def close(self) -> None:
        if self._readers is not None:
            self._readers.close()
        with self._lock:
            self._conn.close()


_PLACEHOLDER = re.compile(r"\?")


def _pg(sql: str) -> str:
    return _PLACEHOLDER.sub("%s", sql)


class _PostgresTx(Tx):
    row_lock = " FOR UPDATE"

    def __init__(self, conn: Any) -> None:
        self.conn = conn

    def commit_without_flush(self) -> None:
        self.execute("SET LOCAL synchronous_commit TO off")  # this transaction only

    def execute(self, sql: str, params: Sequence[Any] = ()) -> list[Row]:
        with self.conn.cursor() as cursor:
            cursor.execute(_pg(sql), tuple(params))
            if cursor.description is None:
                return []
            names = [d.name for d in cursor.description]
            return [dict(zip(names, row)) for row in cursor.fetchall()]

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        with self.conn.cursor() as cursor:
            cursor.executemany(_pg(sql), rows)

    def upsert(self, table: str, key: Sequence[str], columns: dict[str, str],
               rows: Sequence[Sequence[Any]]) -> None:
        """One statement for the whole batch: a binary array per column, unnested.

        An `executemany` costs a server round of parse/bind/execute per row;
        this is one, about 4x faster for a rebuild's thousands of rows.
        """
        if len(rows) < UNNEST_MIN_ROWS:
            super().upsert(table, key, columns, rows)
            return
        names = list(columns)
        arrays = [_column(values, columns[name]) for name, values in zip(names, zip(*rows))]
        if any(a is None for a in arrays):  # an odd value: let the server cast it, row by row
            super().upsert(table, key, columns, rows)
            return
        casts = ", ".join(f"%b::{TYPES['postgres'][columns[c]]}[]" for c in names)
        updates = ", ".join(f"{c} = excluded.{c}" for c in names if c not in key)
        with self.conn.cursor() as cursor:
            cursor.execute(f"INSERT INTO {table} ({', '.join(names)}) "
                           f"SELECT * FROM unnest({casts}) "
                           f"ON CONFLICT ({', '.join(key)}) DO UPDATE SET {updates}", arrays)


    def read_table(self, table: str, columns: dict[str, str], key: Sequence[str]) -> pa.Table:
        """`Tx.read_table` through `COPY … TO STDOUT` as CSV, parsed by Arrow (C on both
        sides: ~10x the rows a second of fetching tuples into Python)."""
        from eventstore.arrow_rows import from_csv

        query = f"SELECT {', '.join(columns)} FROM {table} ORDER BY {', '.join(key)}"
        with self.conn.cursor() as cursor, cursor.copy(
                f"COPY ({query}) TO STDOUT (FORMAT csv)") as copy:
            data = b"".join(bytes(block) for block in copy)
        return from_csv(data, columns)

    def write_table(self, table: str, columns: dict[str, str], data: pa.Table,
                    options: str = "") -> None:
        """`Tx.write_table` through `COPY … FROM STDIN` of Arrow's CSV."""
        from eventstore.arrow_rows import to_csv

        with self.conn.cursor() as cursor, cursor.copy(
                f"COPY {table} ({', '.join(columns)}) FROM STDIN (FORMAT csv{options})") as copy:
            for block in to_csv(data.select(list(columns))):
                copy.write(block)

    def load_table(self, ddl: Sequence[str], table: str, columns: dict[str, str],
                   data: pa.Table) -> None:
        """`Tx.load_table` as PostgreSQL bulk-loads: the table created without its primary
        key, the rows sent by `COPY … FREEZE` (written frozen: the table is this
        transaction's own, so no later pass rewrites every page to set hint bits), then
        the primary key and the other indexes built over the rows at once (a sort each,
        with `BULK_LOAD_MEMORY` of `maintenance_work_mem`, not a B-tree insert a row)."""
        indexes = [s for s in ddl if s.split(None, 2)[1] == "INDEX"]
        for statement in ddl:
            if statement not in indexes:
                self.execute(statement)
        self.execute(f"SET LOCAL maintenance_work_mem TO '{BULK_LOAD_MEMORY}'")
        key = self.execute("SELECT conname, pg_get_constraintdef(oid) AS definition FROM "
                           "pg_constraint WHERE conrelid = ?::regclass AND contype = 'p'",
                           (table,))
        for row in key:
            self.execute(f"ALTER TABLE {table} DROP CONSTRAINT {row['conname']}")
        self.write_table(table, columns, data, ", FREEZE")
        for row in key:
            self.execute(f"ALTER TABLE {table} ADD CONSTRAINT {row['conname']} "
                         f"{row['definition']}")
        for statement in indexes:
            self.execute(statement)


#: `maintenance_work_mem` while a bulk load builds its indexes: a read model's keys and
#: full-text documents sort in memory instead of in runs spilled to disk (the server's
#: default is 64 MB; this is taken only while an index is built, by one process)
BULK_LOAD_MEMORY = "256MB"
UNNEST_MIN_ROWS = 8  # below this, executemany's few rounds cost less than building arrays


_KINDS: dict[str, tuple[type, ...]] = {"int": (int,), "real": (int, float)}


def _column(values: Sequence[Any], kind: str) -> list[Any] | None:
    """One column as a list of one Python type (one binary array), None if it cannot be."""
    allowed = _KINDS.get(kind, (str,))
    if not all(v is None or isinstance(v, allowed) for v in values):
        return None
    if kind in _KINDS:  # bools are ints here, but would dump as a boolean array
        cast = float if kind == "real" else int
        return [None if v is None else cast(v) for v in values]
    return list(values)


def _alive(conn: Any) -> bool:
    """Whether a PostgreSQL connection is still usable, without a round trip: what the
    server sent meanwhile is read from the socket (a restart's "terminating connection"
    and the close), so a connection cut while idle is found before it fails a statement."""
    import psycopg
    from psycopg.pq import ConnStatus

    if conn.closed or conn.broken:
        return False
    try:  # twice: the first read may take the server's last message, the second its close
        conn.pgconn.consume_input()
        conn.pgconn.consume_input()
    except psycopg.OperationalError:
        return False
    return bool(conn.pgconn.status == ConnStatus.OK)


class PostgresDatabase(Database):
    """Read models in a PostgreSQL schema (distributed deployment)."""

    dialect = "postgres"

    def __init__(self, conninfo: str, schema: str = "readmodel") -> None:
        if not re.fullmatch(r"[a-z_][a-z0-9_]{0,62}", schema):
            raise ValueError(f"invalid schema name {schema!r}")
        self.schema = schema
        self.created: set[str] = set()
        self._conninfo = conninfo
        self._lock = threading.RLock()
        self._conn = self._connect()
        self._readers = Readers(self._reader, _alive)

    def _reader(self) -> Any:
        import psycopg

        conn = psycopg.connect(self._conninfo, autocommit=True)
        conn.execute(f"SET search_path TO {self.schema}")
        conn.execute("SET default_transaction_read_only = on")
        return conn

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[Row]:
        import psycopg

        for again in (True, False):
            with self._readers.connection() as conn:  # autocommit: the statement's snapshot
                try:
                    return _PostgresTx(conn).execute(sql, params)
                except psycopg.OperationalError:
                    if not (again and conn.broken):
                        raise
                    # the server closed it (a restart): so it did the idle ones; a read
                    # can be made again on a new connection
                    self._readers.discard_idle()
        raise AssertionError("unreachable")  # pragma: no cover - the loop returns or raises

    def _connect(self) -> Any:
        import psycopg

        conn = psycopg.connect(self._conninfo, autocommit=False)
        with conn.cursor() as cursor:
            cursor.execute(f"CREATE SCHEMA IF NOT EXISTS {self.schema}")
            cursor.execute(f"SET search_path TO {self.schema}")
        conn.commit()
        return conn

    @contextmanager
    def transaction(self) -> Iterator[Tx]:
        with self._lock:
            if not _alive(self._conn):  # the server restarted (or closed it): reconnect
                self._conn.close()
                self._conn = self._connect()
            try:
                yield _PostgresTx(self._conn)
                self._conn.commit()
            except BaseException:
                if not (self._conn.closed or self._conn.broken):
                    self._conn.rollback()
                raise

    def table_names(self) -> set[str]:
        rows = self.query(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = ?",
            (self.schema,),
        )
        return {r["table_name"] for r in rows}

    def object_names(self) -> set[str]:
        rows = self.query(
            "SELECT c.relname || CASE WHEN a.attname IS NULL THEN '' ELSE '.' || a.attname END"
            " AS name FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace LEFT JOIN "
            "pg_attribute a ON a.attrelid = c.oid AND a.attname = ? AND NOT a.attisdropped "
            "WHERE n.nspname = ? UNION SELECT c.relname FROM pg_class c JOIN pg_namespace n "
            "ON n.oid = c.relnamespace WHERE n.nspname = ?", (DOC, self.schema, self.schema))
        return {r["name"] for r in rows}

    @contextmanager
    def snapshot(self) -> Iterator[Tx]:
        """`Database.snapshot`: a repeatable-read transaction (its first statement)."""
        with self.transaction() as tx:
            tx.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            yield tx

    def close(self) -> None:
        self._readers.close()
        with self._lock:
            self._conn.close()
