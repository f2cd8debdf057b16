"""The SQLite backend (the embedded default): one file, the library's SQLite recorder
with one `executemany` per save (`BatchInsertRecorder`)."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any
from uuid import UUID

from eventsourcing.persistence import StoredEvent
from eventsourcing.sqlite import SQLiteApplicationRecorder

from domain.envelope import StoredRow
from eventstore.base import Backend, ImportRow, LinkedRow, Snapshots, not_empty, snapshots_not_written
from eventstore.chain import GENESIS, ChainRow, backfill, link_events, link_rows, links_table
from eventstore.locks import Holder, sqlite_lock
from eventstore.sqlite_factory import TOPIC as FACTORY

__all__ = ["BatchInsertRecorder", "SQLiteBackend"]


class BatchInsertRecorder(SQLiteApplicationRecorder):
    """The library's SQLite recorder, inserting a save's events in one `executemany`
    instead of one `execute` per event (for each event's `lastrowid`).

    The save's snapshots go into the same transaction, in a savepoint (one commit
    a save; see `_insert_snapshots`).

    The notification ids are still exact: the save holds the write lock from its
    first insert, and SQLite numbers each row of a table without AUTOINCREMENT one
    past the largest rowid, so the batch takes `last - n + 1 .. last`; the count of
    rows in that range confirms it, else each id is read back.

    Each event's audit-chain link (`eventstore.chain`) is written beside it, in the same
    transaction: the write lock orders the links as it orders the ids.
    """

    def create_table(self) -> None:
        super().create_table()
        _ensure_links(self)

    def _insert_events(self, c: Any, stored_events: Sequence[StoredEvent], *,
                       snapshots: Snapshots | None = None, **_: Any) -> Sequence[int] | None:
        if not stored_events:
            return []
        c.executemany(self.insert_events_statement, [
            (e.originator_id.hex if isinstance(e.originator_id, UUID) else e.originator_id,
             e.originator_version, e.topic, e.state) for e in stored_events])
        c.execute("SELECT last_insert_rowid()")
        last, count = int(c.fetchone()[0]), len(stored_events)
        first = last - count + 1
        c.execute(f"SELECT count(*) FROM {self.events_table_name} WHERE rowid BETWEEN ? AND ?",
                  (first, last))
        if c.fetchone()[0] == count:
            ids = list(range(first, last + 1))
        else:
            ids = [self._rowid(c, e) for e in stored_events]  # not seen; kept exact regardless
        _write_links(c, self.events_table_name, ids, stored_events)
        if snapshots:
            _insert_snapshots(c, *snapshots)
        return ids

    def _rowid(self, c: Any, event: StoredEvent) -> int:
        originator = event.originator_id
        c.execute(f"SELECT rowid FROM {self.events_table_name} WHERE originator_id = ? "
                  "AND originator_version = ?",
                  (originator.hex if isinstance(originator, UUID) else originator,
                   event.originator_version))
        return int(c.fetchone()[0])


def _write_links(c: Any, events_table: str, ids: Sequence[int],
                 stored_events: Sequence[StoredEvent]) -> None:
    """The links of a save's events, chained from the last link stored."""
    table = links_table(events_table)
    c.execute(f"SELECT link FROM {table} ORDER BY notification_id DESC LIMIT 1")
    last = c.fetchone()
    if any(a >= b for a, b in zip(ids, ids[1:])):  # not seen (`_rowid`): kept exact regardless
        ids, stored_events = zip(*sorted(zip(ids, stored_events), key=lambda pair: pair[0]))
    links = link_events(bytes(last[0]) if last else GENESIS, ids, stored_events)
    c.executemany(f"INSERT INTO {table} (notification_id, link) VALUES (?, ?)", zip(ids, links))


def _ensure_links(recorder: Any) -> None:
    """Create the links table; chain the events of a store written before it (one-time)."""
    events, table = recorder.events_table_name, links_table(recorder.events_table_name)
    settled = (f"SELECT EXISTS(SELECT 1 FROM {table}) OR NOT EXISTS(SELECT 1 FROM {events})")
    with recorder.datastore.transaction(commit=False) as c:
        c.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (table,))
        if c.fetchone() is not None:
            c.execute(settled)
            if c.fetchone()[0]:
                return
    with recorder.datastore.transaction(commit=True) as c:
        c.execute(f"CREATE TABLE IF NOT EXISTS {table} "
                  "(notification_id INTEGER PRIMARY KEY, link BLOB NOT NULL)")
        c.execute(f"DELETE FROM {table} WHERE 0")  # the write lock, before looking again
        c.execute(settled)
        if c.fetchone()[0]:
            return

        def read(after: int) -> list[ChainRow]:
            c.execute(f"SELECT rowid, originator_id, originator_version, topic, state FROM "
                      f"{events} WHERE rowid > ? ORDER BY rowid LIMIT 5000", (after,))
            return [tuple(row) for row in c.fetchall()]

        backfill(read, lambda links: c.executemany(
            f"INSERT INTO {table} (notification_id, link) VALUES (?, ?)", links))


def _insert_snapshots(c: Any, recorder: Any, snapshots: Sequence[StoredEvent]) -> None:
    """A save's snapshots in a savepoint of its transaction: rows that cannot be written
    are rolled back and logged, the events still commit. Where SQLite itself rolled the
    whole transaction back (disk full, I/O error), rolling back to the savepoint fails
    and so does the save: nothing is committed, nothing claimed."""
    c.execute("SAVEPOINT snapshots")
    try:
        recorder._insert_events(c, snapshots)
    except Exception:
        c.execute("ROLLBACK TO snapshots")
        snapshots_not_written(len(snapshots))
    c.execute("RELEASE snapshots")


BATCH_INSERT_RECORDER = f"{__name__}:{BatchInsertRecorder.__qualname__}"


class SQLiteBackend(Backend):
    name = "sqlite"
    ordered_positions = True  # one writer at a time; a row's rowid is one past the largest

    def __init__(self, path: Path, lock_timeout: int = 30) -> None:
        self.path = Path(path)
        self.lock_timeout = lock_timeout

    def library_env(self) -> dict[str, str]:
        return {"PERSISTENCE_MODULE": FACTORY, "SQLITE_DBNAME": str(self.path),
                "SQLITE_LOCK_TIMEOUT": str(self.lock_timeout),
                "APPLICATION_RECORDER_TOPIC": BATCH_INSERT_RECORDER}

    def describe(self) -> str:
        return f"sqlite:///{self.path}"

    def runner_lock(self, holder: Holder) -> AbstractContextManager[Holder]:
        return sqlite_lock(self.path, self.describe(), holder)

    def notification_rows(self, recorder: Any, after: int, limit: int) -> list[StoredRow]:
        statement = (f"SELECT rowid, originator_id, originator_version, topic, state "
                     f"FROM {recorder.events_table_name} WHERE rowid > ? ORDER BY rowid LIMIT ?")
        with recorder.datastore.transaction(commit=False) as cursor:
            cursor.execute(statement, (after, limit))
            return [tuple(row) for row in cursor.fetchall()]

    def chain_rows(self, recorder: Any, after: int, limit: int) -> list[LinkedRow]:
        events = recorder.events_table_name
        return _query(recorder, f"SELECT e.rowid, e.originator_id, e.originator_version, e.topic, "
                      f"e.state, l.link FROM {events} e LEFT JOIN {links_table(events)} l "
                      "ON l.notification_id = e.rowid WHERE e.rowid > ? ORDER BY e.rowid LIMIT ?",
                      [after, limit])

    def orphan_links(self, recorder: Any) -> list[int]:
        events = recorder.events_table_name
        rows = _query(recorder, f"SELECT l.notification_id FROM {links_table(events)} l "
                      f"WHERE NOT EXISTS (SELECT 1 FROM {events} e WHERE e.rowid = "
                      "l.notification_id) ORDER BY l.notification_id LIMIT 10", [])
        return [int(row[0]) for row in rows]

    def originator_ids(self, recorder: Any) -> list[UUID]:
        rows = _query(recorder, f"SELECT DISTINCT originator_id FROM {recorder.events_table_name}",
                      [])
        return [self._originator(recorder, row[0]) for row in rows]

    def import_rows(self, recorder: Any, batches: Iterable[Sequence[ImportRow]]) -> int:
        table = recorder.events_table_name
        inserted = 0
        with recorder.datastore.transaction(commit=True) as cursor:
            cursor.execute(f"SELECT count(*) FROM {table}")
            if (found := cursor.fetchone()[0]):
                raise not_empty(found, self.describe())
            cursor.execute(f"SELECT count(*) FROM {links_table(table)}")
            if (found := cursor.fetchone()[0]):
                raise not_empty(found, self.describe() + " (its audit chain)")
            previous = GENESIS
            for batch in batches:
                rows = [(p, i.hex, v, t, s) for p, i, v, t, s in batch]
                cursor.executemany(f"INSERT INTO {table} (rowid, originator_id, originator_version,"
                                   " topic, state) VALUES (?, ?, ?, ?, ?)", rows)
                links = link_rows(previous, rows)
                cursor.executemany(f"INSERT INTO {links_table(table)} (notification_id, link) "
                                   "VALUES (?, ?)", links)
                inserted, previous = inserted + len(batch), links[-1][1] if links else previous
            # the write lock is ours since the first insert: nobody wrote in between
            cursor.execute(f"SELECT count(*) FROM {table}")
            if (found := cursor.fetchone()[0]) != inserted:
                raise not_empty(found - inserted, self.describe())
        return inserted

    def _after_chunk(self, recorder: Any, ids: list[UUID], floors: list[int]) -> list[Any]:
        values = ",".join("(?, ?)" for _ in ids)
        return _query(recorder, f"WITH f(id, v) AS (VALUES {values}) SELECT {_COLUMNS} "
                      f"FROM {recorder.events_table_name} e JOIN f ON e.originator_id = f.id "
                      f"AND e.originator_version > f.v {_ORDER}",
                      [x for i, v in zip(ids, floors) for x in (i.hex, v)])

    def _latest_chunk(self, recorder: Any, ids: list[UUID]) -> list[Any]:
        # the bare columns come from the row holding the max()
        marks = ",".join("?" for _ in ids)
        return _query(recorder, "SELECT originator_id, max(originator_version) AS "
                      f"originator_version, topic, state FROM {recorder.events_table_name} "
                      f"WHERE originator_id IN ({marks}) GROUP BY originator_id",
                      [i.hex for i in ids])

    def _delete_chunk(self, recorder: Any, ids: list[UUID]) -> None:
        marks = ",".join("?" for _ in ids)
        with recorder.datastore.transaction(commit=True) as cursor:
            cursor.execute(f"DELETE FROM {recorder.events_table_name} WHERE originator_id IN "
                           f"({marks})", [i.hex for i in ids])

    def head_position(self, recorder: Any) -> int:
        return int(recorder.max_notification_id() or 0)

    def changed_after(self, recorder: Any, after: int,
                      ids: Collection[UUID]) -> dict[UUID, int]:
        rows = _query(recorder, f"SELECT originator_id, originator_version FROM "
                      f"{recorder.events_table_name} WHERE rowid > ?", [after])
        found: dict[UUID, int] = {}
        if not rows:
            return found
        if len(rows) <= len(ids):  # the rows' ids parsed when they are fewer (usually)
            for originator, version in rows:
                key = UUID(originator)
                if key in ids and version > found.get(key, 0):
                    found[key] = version
            return found
        text = {i.hex: i for i in ids}  # else the ids asked for written out
        for originator, version in rows:
            asked = text.get(originator)
            if asked is not None and version > found.get(asked, 0):
                found[asked] = version
        return found

    def _versions_chunk(self, recorder: Any, ids: list[UUID]) -> list[tuple[Any, Any]]:
        values = ",".join("(?)" for _ in ids)
        asked = {i.hex: i for i in ids}  # each row's id as asked for, not parsed again
        rows = _query(recorder, f"WITH f(id) AS (VALUES {values}) SELECT f.id, (SELECT "
                      f"max(originator_version) FROM {recorder.events_table_name} "
                      f"WHERE originator_id = f.id) FROM f", list(asked))
        return [(asked[row[0]], row[1]) for row in rows]

    def _originator(self, recorder: Any, value: Any) -> UUID:
        if isinstance(value, UUID):  # an id as asked for (`_versions_chunk`)
            return value
        return UUID(str(recorder.convert_originator_id(value)))


_COLUMNS = "e.originator_id, e.originator_version, e.topic, e.state"
_ORDER = "ORDER BY e.originator_id, e.originator_version"


def _query(recorder: Any, statement: str, parameters: list[Any]) -> list[Any]:
    with recorder.datastore.transaction(commit=False) as cursor:
        cursor.execute(statement, parameters)
        return list(cursor.fetchall())
