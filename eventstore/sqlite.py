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
from eventstore.chain import GENESIS, ChainRow, backfill, link_events, link_rows
from eventstore.locks import Holder, sqlite_lock
from eventstore.sqlite_factory import TOPIC as FACTORY

__all__ = ["BatchInsertRecorder", "SQLiteBackend"]


class BatchInsertRecorder(SQLiteApplicationRecorder):
    """The library's SQLite recorder, inserting a save's events in one `executemany`
    instead of one `execute` per event (for each event's `lastrowid`).

    The save's snapshots go into the same transaction, in a savepoint (one commit
    a save; see `_insert_snapshots`).

    The save takes the write lock first (a write that changes nothing), then reads the
    last row: its rowid and its audit-chain link (`eventstore.chain`). No other writer
    can insert until the save commits, so the save's events take the next rowids, as
    SQLite would number them (one past the largest), and each is inserted with its
    notification id and its link (the column `link`) given: the links follow
    notification-id order.
    """

    def __init__(self, datastore: Any, events_table_name: str = "stored_events") -> None:
        super().__init__(datastore, events_table_name)
        table = self.events_table_name
        self.take_write_lock = f"DELETE FROM {table} WHERE rowid = -1"
        self.last_row = f"SELECT rowid, link FROM {table} ORDER BY rowid DESC LIMIT 1"
        self.insert_linked = (f"INSERT INTO {table} (rowid, originator_id, originator_version, "
                              "topic, state, link) VALUES (?, ?, ?, ?, ?, ?)")

    def create_table(self) -> None:
        super().create_table()
        _ensure_links(self)

    def _insert_events(self, c: Any, stored_events: Sequence[StoredEvent], *,
                       snapshots: Snapshots | None = None, **_: Any) -> Sequence[int] | None:
        if not stored_events:
            return []
        c.execute(self.take_write_lock)
        c.execute(self.last_row)
        last = c.fetchone()
        first = int(last[0]) + 1 if last else 1
        ids = list(range(first, first + len(stored_events)))
        links = link_events(bytes(last[1]) if last and last[1] is not None else GENESIS, ids,
                            stored_events)
        c.executemany(self.insert_linked, [
            (i, e.originator_id.hex if isinstance(e.originator_id, UUID) else e.originator_id,
             e.originator_version, e.topic, e.state, link)
            for i, e, link in zip(ids, stored_events, links)])
        if snapshots:
            _insert_snapshots(c, *snapshots)
        return ids


def _ensure_links(recorder: Any) -> None:
    """Add the `link` column; chain the events of a store written before it (one-time)."""
    events = recorder.events_table_name
    column = f"SELECT count(*) FROM pragma_table_info('{events}') WHERE name = 'link'"
    settled = (f"SELECT EXISTS(SELECT 1 FROM {events} WHERE link IS NOT NULL) "
               f"OR NOT EXISTS(SELECT 1 FROM {events})")
    with recorder.datastore.transaction(commit=False) as c:
        c.execute(column)
        if c.fetchone()[0]:
            c.execute(settled)
            if c.fetchone()[0]:
                return
    with recorder.datastore.transaction(commit=True) as c:
        c.execute(f"DELETE FROM {events} WHERE rowid = -1")  # the write lock, before looking again
        c.execute(column)
        if not c.fetchone()[0]:
            c.execute(f"ALTER TABLE {events} ADD COLUMN link BLOB")
        c.execute(settled)
        if c.fetchone()[0]:
            return

        def read(after: int) -> list[ChainRow]:
            c.execute(f"SELECT rowid, originator_id, originator_version, topic, state FROM "
                      f"{events} WHERE rowid > ? ORDER BY rowid LIMIT 5000", (after,))
            return [tuple(row) for row in c.fetchall()]

        backfill(read, lambda links: c.executemany(
            f"UPDATE {events} SET link = ? WHERE rowid = ?", [(link, i) for i, link in links]))


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

    def notification_heads(self, recorder: Any, after: int, limit: int
                           ) -> list[tuple[int, UUID | str, str]]:
        return [tuple(row) for row in _query(
            recorder, f"SELECT rowid, originator_id, topic FROM {recorder.events_table_name} "
            "WHERE rowid > ? ORDER BY rowid LIMIT ?", [after, limit])]

    def rows_at(self, recorder: Any, positions: Sequence[int]) -> list[StoredRow]:
        found: list[StoredRow] = []
        for start in range(0, len(positions), 500):
            part = list(positions[start:start + 500])
            found += [tuple(row) for row in _query(
                recorder, f"SELECT rowid, originator_id, originator_version, topic, state FROM "
                f"{recorder.events_table_name} WHERE rowid IN ({', '.join('?' for _ in part)}) "
                "ORDER BY rowid", part)]
        return found

    def stream_rows(self, recorder: Any, stream_id: UUID, after: int = 0,
                    last: int | None = None) -> list[StoredRow]:
        order = "ORDER BY originator_version" + ("" if last is None else " DESC LIMIT ?")
        statement = (f"SELECT rowid, originator_id, originator_version, topic, state FROM "
                     f"{recorder.events_table_name} WHERE originator_id = ? AND rowid > ? "
                     + order)
        parameters: tuple[Any, ...] = (UUID(str(stream_id)).hex, after)
        with recorder.datastore.transaction(commit=False) as cursor:
            cursor.execute(statement, parameters if last is None else (*parameters, last))
            rows = [tuple(row) for row in cursor.fetchall()]
        return rows if last is None else rows[::-1]

    def chain_rows(self, recorder: Any, after: int, limit: int) -> list[LinkedRow]:
        return _query(recorder, "SELECT rowid, originator_id, originator_version, topic, state, "
                      f"link FROM {recorder.events_table_name} WHERE rowid > ? ORDER BY rowid "
                      "LIMIT ?", [after, limit])

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
            previous = GENESIS
            for batch in batches:
                rows = [(p, i.hex, v, t, s) for p, i, v, t, s in batch]
                links = link_rows(previous, rows)
                cursor.executemany(f"INSERT INTO {table} (rowid, originator_id, originator_version,"
                                   " topic, state, link) VALUES (?, ?, ?, ?, ?, ?)",
                                   [(*row, link) for row, (_, link) in zip(rows, links)])
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
