"""Loading and inserting many aggregates' stored events in one query.

Recording a catalog crawl touches hundreds of products; one round trip per
product would blow the recording budget, so the application loads them
all at once and folds each stream itself (SQLite or PostgreSQL), and on
PostgreSQL inserts them with one binary statement (`BinaryInsertRecorder`).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any
from uuid import UUID

from eventsourcing.persistence import AggregateRecorder, StoredEvent
from eventsourcing.postgres import (
    PostgresAggregateRecorder,
    PostgresApplicationRecorder,
    PostgresDatastore,
)
from psycopg.sql import SQL, Identifier

CHUNK = 500  # ids per query (SQLite's parameter limit is far above this)


def select_after(recorder: AggregateRecorder, ids: Iterable[UUID],
                 after: Mapping[UUID, int] | None = None) -> dict[UUID, list[StoredEvent]]:
    """The stored events of each id after version `after[id]` (all of them for ids not in
    `after`), in version order; ids without such events are absent.

    One query per chunk of ids, each id joined with its own starting version
    (snapshot versions are offset by id, so a catalog's products all differ).
    """
    after = after or {}
    wanted = list(dict.fromkeys(ids))
    found: dict[UUID, list[StoredEvent]] = defaultdict(list)
    for start in range(0, len(wanted), CHUNK):
        chunk = wanted[start:start + CHUNK]
        for r in _after_chunk(recorder, chunk, [after.get(i, 0) for i in chunk]):
            found[_originator(recorder, r["originator_id"])].append(_stored(recorder, r))
    return dict(found)


def _after_chunk(recorder: Any, ids: list[UUID], floors: list[int]) -> list[Any]:
    columns = "e.originator_id, e.originator_version, e.topic, e.state"
    order = "ORDER BY e.originator_id, e.originator_version"
    if isinstance(recorder, PostgresAggregateRecorder):
        statement = SQL(f"SELECT {columns} FROM {{schema}}.{{table}} e JOIN "
                        "unnest(%s::uuid[], %s::bigint[]) AS f(id, v) "
                        f"ON e.originator_id = f.id AND e.originator_version > f.v {order}").format(
            schema=Identifier(recorder.datastore.schema),
            table=Identifier(recorder.events_table_name))
        with recorder.datastore.get_connection() as conn, conn.cursor() as cursor:
            cursor.execute(statement, [ids, floors])
            return list(cursor.fetchall())
    values = ",".join("(?, ?)" for _ in ids)
    with recorder.datastore.transaction(commit=False) as cursor:
        cursor.execute(f"WITH f(id, v) AS (VALUES {values}) SELECT {columns} "
                       f"FROM {recorder.events_table_name} e JOIN f "
                       f"ON e.originator_id = f.id AND e.originator_version > f.v {order}",
                       [x for i, v in zip(ids, floors) for x in (i.hex, v)])
        return list(cursor.fetchall())


def select_latest(recorder: AggregateRecorder, ids: Iterable[UUID]) -> dict[UUID, StoredEvent]:
    """The highest-version record of each id (used on the snapshots table)."""
    if isinstance(recorder, PostgresAggregateRecorder):
        rows = _select(recorder, "DISTINCT ON (originator_id) originator_id, originator_version, "
                       "topic, state", "ORDER BY originator_id, originator_version DESC", ids)
    else:  # SQLite: the bare columns come from the row holding the max()
        rows = _select(recorder, "originator_id, max(originator_version) AS originator_version, "
                       "topic, state", "GROUP BY originator_id", ids)
    return {_originator(recorder, r["originator_id"]): _stored(recorder, r) for r in rows}


def _stored(recorder: AggregateRecorder, row: Any) -> StoredEvent:
    return StoredEvent(originator_id=_originator(recorder, row["originator_id"]),
                       originator_version=int(row["originator_version"]),
                       topic=row["topic"], state=bytes(row["state"]))


def select_versions(recorder: AggregateRecorder, ids: Iterable[UUID]) -> dict[UUID, int]:
    """The current (highest) version of each id that has events.

    One index seek per id (a `max()` subquery each), not a `GROUP BY` that
    would read every version of every id: histories only grow.
    """
    wanted = list(dict.fromkeys(ids))
    found: dict[UUID, int] = {}
    for start in range(0, len(wanted), CHUNK):
        for originator, version in _max_versions(recorder, wanted[start:start + CHUNK]):
            if version is not None:
                found[_originator(recorder, originator)] = int(version)
    return found


def _max_versions(recorder: Any, ids: list[UUID]) -> list[tuple[Any, Any]]:
    if isinstance(recorder, PostgresAggregateRecorder):
        statement = SQL("SELECT f.id, (SELECT max(originator_version) FROM {schema}.{table} "
                        "WHERE originator_id = f.id) FROM unnest(%s::uuid[]) AS f(id)").format(
            schema=Identifier(recorder.datastore.schema),
            table=Identifier(recorder.events_table_name))
        with recorder.datastore.get_connection() as conn, conn.cursor() as cursor:
            cursor.execute(statement, [ids])
            return [tuple(row.values()) if isinstance(row, dict) else tuple(row)
                    for row in cursor.fetchall()]
    values = ",".join("(?)" for _ in ids)
    with recorder.datastore.transaction(commit=False) as cursor:
        cursor.execute(f"WITH f(id) AS (VALUES {values}) SELECT f.id, (SELECT "
                       f"max(originator_version) FROM {recorder.events_table_name} "
                       f"WHERE originator_id = f.id) FROM f", [i.hex for i in ids])
        return [tuple(row) for row in cursor.fetchall()]


def _select(recorder: Any, columns: str, tail: str, ids: Iterable[UUID]) -> list[Any]:
    """`SELECT columns … WHERE originator_id in ids tail`, a query per chunk of ids."""
    wanted = list(dict.fromkeys(ids))
    rows: list[Any] = []
    for start in range(0, len(wanted), CHUNK):
        rows.extend(_select_chunk(recorder, columns, tail, wanted[start:start + CHUNK]))
    return rows


def _select_chunk(recorder: Any, columns: str, tail: str, ids: list[UUID]) -> list[Any]:
    if isinstance(recorder, PostgresAggregateRecorder):
        statement = SQL(f"SELECT {columns} FROM {{schema}}.{{table}} "
                        f"WHERE originator_id = ANY(%s) {tail}").format(
            schema=Identifier(recorder.datastore.schema),
            table=Identifier(recorder.events_table_name))
        with recorder.datastore.get_connection() as conn, conn.cursor() as cursor:
            cursor.execute(statement, [ids])
            return list(cursor.fetchall())
    marks = ",".join("?" for _ in ids)
    with recorder.datastore.transaction(commit=False) as cursor:
        cursor.execute(f"SELECT {columns} FROM {recorder.events_table_name} "
                       f"WHERE originator_id IN ({marks}) {tail}", [i.hex for i in ids])
        return list(cursor.fetchall())


def _originator(recorder: Any, value: Any) -> UUID:
    if isinstance(recorder, PostgresAggregateRecorder):
        return value if isinstance(value, UUID) else UUID(str(value))
    return UUID(str(recorder.convert_originator_id(value)))


def _binary_insert(datastore: PostgresDatastore, table: str, returning: str = "") -> Any:
    return SQL(
        "INSERT INTO {schema}.{table} (originator_id, originator_version, topic, state) "
        "SELECT * FROM unnest(%b::{id_type}[], %b::bigint[], %b::text[], %b::bytea[])" + returning
    ).format(schema=Identifier(datastore.schema), table=Identifier(table),
             id_type=Identifier(datastore.originator_id_type))


def _binary_columns(stored_events: Sequence[StoredEvent]) -> tuple[list[Any], ...]:
    return ([e.originator_id for e in stored_events],
            [e.originator_version for e in stored_events],
            [e.topic for e in stored_events],
            [e.state for e in stored_events])


class BinaryInsertRecorder(PostgresApplicationRecorder):
    """The library's PostgreSQL recorder, inserting a batch as four binary arrays.

    The library sends one array of a composite type, which psycopg dumps as
    text, escaping every state byte by byte in Python (~50 µs an event, most
    of a 500-product save). Four binary-format arrays (ids, versions, topics,
    states) carry the same rows at C speed. Same table lock, NOTIFY and
    `RETURNING notification_id` as the library's statement.
    """

    def __init__(self, datastore: PostgresDatastore, *,
                 events_table_name: str = "stored_events") -> None:
        super().__init__(datastore, events_table_name=events_table_name)
        self.binary_insert_statement = _binary_insert(datastore, events_table_name,
                                                      " RETURNING notification_id")

    def _insert_stored_events(self, curs: Any, stored_events: Sequence[StoredEvent],
                              **_: Any) -> None:
        self._lock_table(curs)
        self._notify_channel(curs)
        curs.execute(self.binary_insert_statement, _binary_columns(stored_events))


class BinarySnapshotRecorder(PostgresAggregateRecorder):
    """The library's PostgreSQL aggregate recorder (the snapshot table) with the same
    binary batch insert: snapshots hold whole aggregate states, the largest rows we write."""

    def __init__(self, datastore: PostgresDatastore, *, events_table_name: str) -> None:
        super().__init__(datastore, events_table_name=events_table_name)
        self.binary_insert_statement = _binary_insert(datastore, events_table_name)

    def _insert_stored_events(self, curs: Any, stored_events: Sequence[StoredEvent],
                              **_: Any) -> None:
        curs.execute(self.binary_insert_statement, _binary_columns(stored_events))


BINARY_INSERT_RECORDER = f"{__name__}:{BinaryInsertRecorder.__qualname__}"
