"""Projections: deterministic, idempotent, tracked, rebuildable read models.

A projection turns envelopes (`domain.envelope.Envelope`) into rows. It
reads and writes rows through a batch-local `Rows` cache, so a batch of a
thousand events becomes one upsert per table (`Tx.upsert`) in one transaction,
together with the projection's new position (`projection_positions`).

Idempotency holds twice over: events at or below the tracked position are
skipped, and per-stream rows remember the stream `version` they reflect,
so an event delivered again (Kafka is at-least-once) changes nothing.
"""

from __future__ import annotations

import json
from abc import ABC
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from domain.envelope import Envelope
from domain.sightings import expand
from projections.db import Database, Row, Tx
from projections.search import search_objects, search_table

POSITIONS = "projection_positions"
Handler = Callable[[Envelope, "Rows"], None]


@dataclass(frozen=True)
class Table:
    """A read-model table: name (without prefix), key columns, typed columns."""

    name: str
    key: tuple[str, ...]
    columns: dict[str, str]
    indexes: tuple[tuple[str, ...], ...] = ()
    #: text columns with a full-text index, most telling first (`projections.search`)
    search: tuple[str, ...] = ()

    def ddl(self, db: Database, prefix: str) -> list[str]:
        """The statements creating this table on `db`'s engine (its adapter renders them)."""
        return db.table_ddl(prefix + self.name, self.columns, self.key, self.indexes, self.search)

    def objects(self, dialect: str, prefix: str) -> set[str]:
        """The names of what `ddl` creates, as `Database.object_names` lists them."""
        name = prefix + self.name
        found = {name} | {f"{name}_{'_'.join(index)}" for index in self.indexes}
        if self.search:
            found |= search_objects(dialect, name)
        return found


class Rows:
    """Batch-local row cache over one transaction; `flush` writes what changed."""

    def __init__(self, tx: Tx, tables: dict[str, Table], prefix: str) -> None:
        self.tx = tx
        self.tables = tables
        self.prefix = prefix
        self._rows: dict[tuple[str, tuple[Any, ...]], Row | None] = {}
        self._dirty: set[tuple[str, tuple[Any, ...]]] = set()
        # per table: its key column when it has one (the usual case), else None
        self._single = {name: t.key[0] if len(t.key) == 1 else None for name, t in tables.items()}

    def get(self, table: str, *key: Any) -> Row | None:
        slot = (table, key)
        try:
            return self._rows[slot]
        except KeyError:
            pass
        spec = self.tables[table]
        where = " AND ".join(f"{k} = ?" for k in spec.key)
        found = self.tx.execute(f"SELECT * FROM {self.prefix}{table} WHERE {where}", key)
        row = self._rows[slot] = found[0] if found else None
        return row

    def prefetch(self, table: str, keys: Iterable[Any], chunk: int = 500) -> None:
        """Load many single-key rows in a few queries (instead of one per `get`)."""
        spec = self.tables[table]
        (column,) = spec.key
        wanted = [k for k in dict.fromkeys(keys) if (table, (k,)) not in self._rows]
        for start in range(0, len(wanted), chunk):
            part = wanted[start:start + chunk]
            marks = ", ".join("?" for _ in part)
            for row in self.tx.execute(
                    f"SELECT * FROM {self.prefix}{table} WHERE {column} IN ({marks})", part):
                self._rows[(table, (row[column],))] = row
            for key in part:
                self._rows.setdefault((table, (key,)), None)

    def put(self, table: str, row: Row) -> None:
        column = self._single[table]
        slot = (table, (row[column],) if column is not None
                else tuple([row[k] for k in self.tables[table].key]))
        self._rows[slot] = row
        self._dirty.add(slot)

    def flush(self) -> int:
        by_table: dict[str, list[list[Any]]] = {}
        for slot in self._dirty:
            row = self._rows[slot]
            assert row is not None
            table = slot[0]
            values = by_table.get(table)
            if values is None:
                values = by_table[table] = []
            values.append(list(map(row.get, self.tables[table].columns)))
        for table, values in by_table.items():
            spec = self.tables[table]
            self.tx.upsert(self.prefix + table, spec.key, spec.columns, values)
        written = len(self._dirty)
        self._dirty.clear()
        return written


@dataclass
class Projection(ABC):
    """Base class: subclasses set `name`, `tables` and `handlers()` by event type."""

    prefix: str = ""
    name: str = field(default="", init=False)
    #: bumped when the handlers change what rows they write (the tables staying the
    #: same): checkpoints taken before are then ignored (`projections.checkpoints`)
    checkpoint_version: int = field(default=1, init=False)
    tables: tuple[Table, ...] = field(default=(), init=False)

    def handlers(self) -> dict[str, Handler]:
        raise NotImplementedError

    @property
    def tracking_name(self) -> str:
        return self.prefix + self.name

    def table_map(self) -> dict[str, Table]:
        return {t.name: t for t in self.tables}

    def _applying(self) -> tuple[dict[str, Handler], dict[str, Table]]:
        """`handlers()` and `table_map()`, built once per projection object: a catch-up
        applies every projection to each batch, and a small batch (the embedded runner
        catches up many times a second) paid for rebuilding them each time."""
        built: tuple[dict[str, Handler], dict[str, Table]] | None = self.__dict__.get(
            "_applying_cache")
        if built is None:
            built = self.__dict__["_applying_cache"] = (self.handlers(), self.table_map())
        return built

    def create(self, db: Database) -> None:
        create_all(db, [self])

    def drop(self, db: Database) -> None:
        drop_all(db, [self])

    def create_in(self, db: Database, tx: Tx) -> None:
        """Create this projection's tables (if missing) in the caller's transaction."""
        for table in self.tables:
            for statement in table.ddl(db, self.prefix):
                tx.execute(statement)

    def drop_in(self, db: Database, tx: Tx) -> None:
        """Drop this projection's tables and position in the caller's transaction."""
        for table in self.tables:
            tx.execute(f"DROP TABLE IF EXISTS {self.prefix}{table.name}")
            if table.search and db.dialect == "sqlite":  # PostgreSQL's is a column
                tx.execute(f"DROP TABLE IF EXISTS {search_table(self.prefix + table.name)}")
        tx.execute(f"DELETE FROM {POSITIONS} WHERE name = ?", (self.tracking_name,))

    def position(self, tx: Tx) -> int:
        rows = tx.execute(f"SELECT position FROM {POSITIONS} WHERE name = ?", (self.tracking_name,))
        return int(rows[0]["position"]) if rows else 0

    def apply(self, tx: Tx, envelopes: Sequence[Envelope]) -> None:
        """The one apply loop, used by every projector (database- and Kafka-driven).

        The rows the batch touches are read first, one query per table; each
        envelope then goes through its handler, and the changed rows are written
        once. Handlers skip stream versions a row has already seen.
        """
        handlers, tables = self._applying()
        get = handlers.get
        rows = Rows(tx, tables, self.prefix)
        work = [(handler, env) for env in expand(envelopes)  # a crawl's sightings: per product
                if (handler := get(env.event_type)) is not None]
        streams = [env.stream_id for _, env in work]
        for table in self.tables:
            if len(table.key) == 1:
                rows.prefetch(table.name, streams)
        for handler, env in work:
            handler(env, rows)
        rows.flush()

    def apply_batch(self, tx: Tx, envelopes: Sequence[Envelope]) -> int:
        """Apply the envelopes (in log order) after this projection's position, and move
        the position. Returns how many were past it (applied, or of a type it ignores)."""
        position = self.position(tx)
        applied = self.apply_after(tx, envelopes, position)
        if envelopes and envelopes[-1].position > position:
            tx.executemany(MOVE_POSITION, [(self.tracking_name, envelopes[-1].position)])
        return applied

    def apply_after(self, tx: Tx, envelopes: Sequence[Envelope], position: int) -> int:
        """Apply the envelopes past `position` (the position is the caller's to move)."""
        todo = (envelopes if envelopes and envelopes[0].position > position  # the usual case
                else [e for e in envelopes if e.position > position])
        self.apply(tx, todo)
        return len(todo)


#: move a projection's position (name, position)
MOVE_POSITION = (f"INSERT INTO {POSITIONS} (name, position) VALUES (?, ?) "
                 f"ON CONFLICT (name) DO UPDATE SET position = excluded.position")


def positions(tx: Tx, projections: Sequence[Projection]) -> dict[str, int]:
    """Every projection's position, in one query (0 for one that has none yet)."""
    names = [p.tracking_name for p in projections]
    rows = tx.execute(f"SELECT name, position FROM {POSITIONS} WHERE name IN "
                      f"({', '.join('?' for _ in names)})", names) if names else []
    found = {row["name"]: int(row["position"]) for row in rows}
    return {name: found.get(name, 0) for name in names}


def lowest_position(db: Database, names: Sequence[str]) -> int:
    """The lowest position of the projections tracked as `names` (0 for one that has none
    yet), read on a read connection: a reader neither waits for a catch-up nor writes."""
    rows = db.query(f"SELECT name, position FROM {POSITIONS} WHERE name IN "
                    f"({', '.join('?' for _ in names)})", list(names)) if names else []
    found = {row["name"]: int(row["position"]) for row in rows}
    return min((found.get(name, 0) for name in names), default=0)


def create_all(db: Database, projections: Sequence[Projection]) -> None:
    """Create the projections' tables in one transaction (one commit, not one each:
    on PostgreSQL each commit of DDL waits for its WAL flush). When every table, index
    and search object exists already (the usual case: a process starting on a store
    that has them) one query finds so and nothing is run: each short-lived command
    (`jobs show`) would otherwise send ~60 idempotent statements."""
    wanted = {POSITIONS} | {name for p in projections for t in p.tables
                            for name in t.objects(db.dialect, p.prefix)}
    if wanted <= db.created:
        return
    if not wanted <= db.object_names():
        with db.transaction() as tx:
            create_positions(db, tx)
            for projection in projections:
                projection.create_in(db, tx)
    db.created |= wanted


def drop_all(db: Database, projections: Sequence[Projection]) -> None:
    """Drop the projections' tables and positions in one transaction."""
    db.created.clear()
    with db.transaction() as tx:
        create_positions(db, tx)
        for projection in projections:
            projection.drop_in(db, tx)


#: each projection's position in the notification log
POSITIONS_TABLE = Table(POSITIONS, ("name",), {"name": "text", "position": "int"})


def create_positions(db: Database, tx: Tx) -> None:
    for statement in POSITIONS_TABLE.ddl(db, ""):
        tx.execute(statement)


def fresh(row: Row | None, env: Envelope) -> bool:
    """True if the row has not yet seen this stream version (dedup of redelivery)."""
    return row is not None and int(row.get("version") or 0) < env.version


#: what `json.dumps(value, sort_keys=True, separators=(",", ":"))` uses, built once
#: (`dumps` with options builds a new encoder for every call)
_ENCODER = json.JSONEncoder(sort_keys=True, separators=(",", ":"))


def dumps(value: Any) -> str:
    return _ENCODER.encode(value)


def loads(text: str | None) -> Any:
    return json.loads(text) if text else None


def table_rows(db: Database, table: Table, prefix: str) -> list[Row]:
    order = ", ".join(table.key)
    return db.query(f"SELECT * FROM {prefix}{table.name} ORDER BY {order}")


def all_tables(projections: Iterable[Projection]) -> list[Table]:
    return [t for p in projections for t in p.tables]


Change = Callable[[Row, dict[str, Any]], dict[str, Any]]


def updater(table: str, change: Change, stamp: str | None = None) -> Handler:
    """A handler that updates the stream's row with `change(row, payload)`, once per version.

    The row is updated in place: it is the batch cache's own dict (a fresh one per
    `Rows`, read from the table or built by a creator), and `change` has read what it
    needs from it before the update.
    """
    def apply(env: Envelope, rows: Rows) -> None:
        row = rows.get(table, env.stream_id)
        if row is None or int(row.get("version") or 0) >= env.version:  # see `fresh`
            return
        row.update(change(row, env.payload))
        row["version"] = env.version
        if stamp:
            row[stamp] = env.occurred_at
        rows.put(table, row)
    return apply


def creator(table: str, build: Callable[[Envelope], Row]) -> Handler:
    """A handler that creates the stream's row, unless it exists (redelivery)."""
    def apply(env: Envelope, rows: Rows) -> None:
        if rows.get(table, env.stream_id) is None:
            rows.put(table, dict(build(env), version=env.version))
    return apply
