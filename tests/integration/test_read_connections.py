"""Read-model reads (`Database.query`) go through read-only connections of their own, on
both backends: a read neither waits for a write transaction nor sees it before it
commits, a read cannot write, and a read connection the server dropped is replaced."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from backends import open_ledger, store_url

from ledger.bootstrap import Ledger
from projections.db import Database, PostgresDatabase, Readers

TABLE = "read_connections_probe"


@pytest.fixture
def db(ledger: Ledger) -> Iterator[Database]:
    with ledger.db.transaction() as tx:
        tx.execute(f"CREATE TABLE {TABLE} (k TEXT PRIMARY KEY)")
    yield ledger.db


def test_a_read_neither_waits_for_a_write_transaction_nor_sees_it(db: Database) -> None:
    wrote, release = threading.Event(), threading.Event()

    def write() -> None:
        with db.transaction() as tx:
            tx.execute(f"INSERT INTO {TABLE} (k) VALUES ('a')")
            wrote.set()
            release.wait(30)

    writer = threading.Thread(target=write)
    writer.start()
    try:
        assert wrote.wait(10)
        with ThreadPoolExecutor(1) as pool:  # another thread, as the runner's are
            # a read waiting for the writer's lock would time out here
            during = pool.submit(db.query, f"SELECT k FROM {TABLE}").result(timeout=10)
    finally:
        release.set()
        writer.join(10)
    assert during == []
    assert db.query(f"SELECT k FROM {TABLE}") == [{"k": "a"}]  # committed before the read


def test_a_read_cannot_write(db: Database) -> None:
    with pytest.raises(Exception, match="(?i)read-only|readonly"):
        db.query(f"INSERT INTO {TABLE} (k) VALUES ('b')")
    assert db.query(f"SELECT k FROM {TABLE}") == []


@pytest.fixture
def pg_db(tmp_path: Path) -> Iterator[Database]:
    with store_url("postgres", tmp_path) as url, open_ledger(url, tmp_path) as ledger:
        assert isinstance(ledger.db, PostgresDatabase)
        yield ledger.db


def test_a_read_connection_the_server_dropped_is_replaced(pg_db: Database) -> None:
    """PostgreSQL restarted (its backends terminated): the next read is made on a new
    connection, not failed, and so are the reads after it."""
    db = pg_db

    def reader_pid(_: int) -> int:
        return int(db.query("SELECT pg_backend_pid() AS pid")[0]["pid"])

    with ThreadPoolExecutor(3) as pool:  # reads at once may open several
        pids = set(pool.map(reader_pid, range(12)))
    pids.add(reader_pid(0))  # the one the next read takes
    with db.transaction() as tx:  # the write connection, not one of them
        tx.execute("SELECT pg_terminate_backend(pid) FROM unnest(?::int[]) AS pid",
                   (sorted(pids),))
    assert db.query("SELECT 1 AS one") == [{"one": 1}]
    assert db.query("SELECT 2 AS two") == [{"two": 2}]


class Conn:
    def __init__(self) -> None:
        self.closed = False

    def close(self) -> None:
        self.closed = True


def test_readers_open_on_demand_reuse_and_stay_within_their_size() -> None:
    opened: list[Conn] = []

    def connect() -> Conn:
        opened.append(Conn())
        return opened[-1]

    readers = Readers(connect, lambda conn: not conn.closed, size=2)
    entered, done = threading.Event(), threading.Event()

    def third() -> None:
        with readers.connection():
            entered.set()
        done.set()

    with readers.connection() as first, readers.connection() as second:
        assert first is not second
        waiting = threading.Thread(target=third)
        waiting.start()
        assert not entered.wait(0.2)  # both in use: the third reader waits
    assert entered.wait(10) and done.wait(10)
    waiting.join(10)
    assert len(opened) == 2  # the third reused one given back
    with readers.connection() as again:
        assert again in opened


def test_a_reader_that_failed_is_closed_and_close_ends_them_all() -> None:
    readers = Readers(Conn, lambda conn: not conn.closed, size=2)
    with pytest.raises(ValueError), readers.connection() as failed:
        raise ValueError("the statement failed")
    assert failed.closed
    with readers.connection() as fresh:
        assert fresh is not failed
        with readers.connection() as kept:
            pass
    readers.close()
    assert fresh.closed and kept.closed
    with pytest.raises(RuntimeError, match="closed"), readers.connection():
        pass
