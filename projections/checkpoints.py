"""Projection checkpoints: the read models as they stood at a log position, kept so a
rebuild replays only the events after it.

A checkpoint holds every table of the read models (`read_models()`), each as one
Parquet file (zstd) in a row of `projection_checkpoint_parts`, read in one snapshot
of the read-model database together with the projections' position. Its row in
`projection_checkpoints` records:

- `position`: the log position every projection had applied;
- `link`: the audit-chain link of the event at that position, as stored with it
  (`eventstore.chain`: the hash of every event up to it), so a checkpoint belongs to
  one log: if the log up to `position` is not the one it was taken from (events
  rewritten and their links recomputed, another store, a restore of an older copy),
  the stored link differs and the checkpoint is refused;
- `fingerprint`: a hash of the read models' definitions (tables, columns, keys,
  indexes and each projection's `checkpoint_version`): a checkpoint taken before the
  read models changed no longer fits them and is ignored;
- `digest`: a hash over the position, link, fingerprint and every part's sha256, so
  an edited part (or manifest) is refused too.

A checkpoint is used only after all of these check out; `latest_usable` falls back
to an older one, or to position 0, and reports each refusal in one line. The
checks prove the checkpoint is the one taken at that point of this log; that the
log itself is unaltered is `audit verify`'s to prove.
"""

from __future__ import annotations

import hashlib
import io
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from eventstore.chain import GENESIS
from projections.db import Database, Tx
from projections.framework import (
    MOVE_POSITION,
    Projection,
    Table,
    create_positions,
    positions,
)

__all__ = ["Checkpoint", "Refused", "latest_usable", "restore", "write"]

TABLE = "projection_checkpoints"
PARTS = "projection_checkpoint_parts"
#: checkpoints kept (the newest); older ones are deleted when a new one is written
KEEP = 2
LinkAt = Callable[[int], "bytes | None"]
Report = Callable[[str], None]


class Refused(Exception):
    """A checkpoint that must not be used: the message says why, in one line."""


@dataclass(frozen=True)
class Part:
    table: str
    rows: int
    sha256: str


@dataclass(frozen=True)
class Checkpoint:
    id: int
    position: int
    link: str
    fingerprint: str
    digest: str
    parts: tuple[Part, ...]

    @property
    def rows(self) -> int:
        return sum(p.rows for p in self.parts)


def fingerprint(projections: Sequence[Projection]) -> str:
    """A hash of the read models' definitions (independent of their table prefix)."""
    shape = [[p.name, type(p).__qualname__, getattr(p, "checkpoint_version", 1),
              [[t.name, list(t.key), sorted(t.columns.items()), [list(i) for i in t.indexes],
                list(t.search)] for t in p.tables]] for p in projections]
    return hashlib.sha256(json.dumps(shape, sort_keys=True).encode()).hexdigest()


def _digest(position: int, link: str, fingerprint: str, parts: Sequence[Part]) -> str:
    text = json.dumps([position, link, fingerprint, [[p.table, p.rows, p.sha256] for p in parts]])
    return hashlib.sha256(text.encode()).hexdigest()


def create_tables(db: Database) -> None:
    with db.transaction() as tx:
        _create_tables(db, tx)


#: the checkpoints and their tables' Parquet parts (rendered by the database's adapter)
_TABLES = (
    Table(TABLE, ("id",), {"id": "int", "position": "int", "link": "text", "fingerprint": "text",
                           "digest": "text", "manifest": "text"}),
    Table(PARTS, ("checkpoint", "name"), {"checkpoint": "int", "name": "text", "data": "blob"}),
)


def _create_tables(db: Database, tx: Tx) -> None:
    for table in _TABLES:
        for statement in table.ddl(db, ""):
            tx.execute(statement)


def checkpoints(db: Database) -> list[Checkpoint]:
    """The recorded checkpoints, newest first."""
    create_tables(db)
    rows = db.query(f"SELECT id, position, link, fingerprint, digest, manifest FROM {TABLE} "
                    "ORDER BY position DESC, id DESC")
    return [Checkpoint(int(r["id"]), int(r["position"]), r["link"], r["fingerprint"],
                       r["digest"], tuple(Part(*p) for p in json.loads(r["manifest"])))
            for r in rows]


def write(db: Database, projections: Sequence[Projection], link_at: LinkAt,
          keep: int = KEEP) -> Checkpoint:
    """Take a checkpoint of the projections as they stand (all at one position: catch
    them up first); older checkpoints beyond the newest `keep` are deleted."""
    create_tables(db)
    with db.snapshot() as tx:
        at = set(positions(tx, projections).values())
        if len(at) != 1:
            raise Refused(f"the read models are at different positions {sorted(at)}: "
                          "catch them up before taking a checkpoint")
        (position,) = at
        data = {t.name: _parquet(tx.read_table(p.prefix + t.name, t.columns, t.key))
                for p in projections for t in p.tables}
    link = link_at(position) if position else GENESIS
    if link is None:
        raise Refused(f"the event at position {position} has no chain link to tie a "
                      "checkpoint to")
    parts = tuple(Part(name, rows, hashlib.sha256(blob).hexdigest())
                  for name, (blob, rows) in data.items())
    shape = fingerprint(projections)
    digest = _digest(position, link.hex(), shape, parts)
    with db.transaction() as tx:
        found = tx.execute(f"SELECT max(id) AS id FROM {TABLE}")
        number = int(found[0]["id"] or 0) + 1
        tx.execute(f"INSERT INTO {TABLE} (id, position, link, fingerprint, digest, manifest) "
                   "VALUES (?, ?, ?, ?, ?, ?)",
                   (number, position, link.hex(), shape, digest,
                    json.dumps([[p.table, p.rows, p.sha256] for p in parts])))
        tx.executemany(f"INSERT INTO {PARTS} (checkpoint, name, data) VALUES (?, ?, ?)",
                       [(number, name, blob) for name, (blob, _) in data.items()])
        old = tx.execute(f"SELECT id FROM {TABLE} ORDER BY position DESC, id DESC")[keep:]
        for row in old:
            tx.execute(f"DELETE FROM {PARTS} WHERE checkpoint = ?", (row["id"],))
            tx.execute(f"DELETE FROM {TABLE} WHERE id = ?", (row["id"],))
    return Checkpoint(number, position, link.hex(), shape, digest, parts)


def _parquet(table: pa.Table) -> tuple[bytes, int]:
    sink = io.BytesIO()
    pq.write_table(table, sink, compression="zstd")
    return sink.getvalue(), table.num_rows


def check(db: Database, point: Checkpoint, projections: Sequence[Projection],
          link_at: LinkAt) -> dict[str, pa.Table] | None:
    """The checkpoint's tables if it can be used; None if it was taken for other read
    model definitions; `Refused` if it does not belong to this log or was altered."""
    if point.fingerprint != fingerprint(projections):
        return None
    name = f"checkpoint {point.id} at position {point.position}"
    stored = link_at(point.position) if point.position else GENESIS
    if stored is None or stored.hex() != point.link:
        raise Refused(f"{name} refused: its chain link does not match the event log's at that "
                      "position (taken from another log, or the log was rewritten)")
    if _digest(point.position, point.link, point.fingerprint, point.parts) != point.digest:
        raise Refused(f"{name} refused: its manifest does not match its digest (altered)")
    rows = db.query(f"SELECT name, data FROM {PARTS} WHERE checkpoint = ?", (point.id,))
    blobs = {r["name"]: bytes(r["data"]) for r in rows}
    tables: dict[str, pa.Table] = {}
    for part in point.parts:
        blob = blobs.get(part.table)
        if blob is None or hashlib.sha256(blob).hexdigest() != part.sha256:
            raise Refused(f"{name} refused: its table {part.table} does not match its digest "
                          "(altered or missing)")
        tables[part.table] = pq.read_table(io.BytesIO(blob))
    wanted = {t.name for p in projections for t in p.tables}
    if set(tables) != wanted:
        raise Refused(f"{name} refused: it holds tables {sorted(set(tables) ^ wanted)} "
                      "other than the read models'")
    return tables


def latest_usable(db: Database, projections: Sequence[Projection], link_at: LinkAt,
                  report: Report) -> tuple[Checkpoint, dict[str, pa.Table]] | None:
    """The newest checkpoint that checks out, with its tables; each one refused or
    ignored on the way is reported in one line."""
    for point in checkpoints(db):
        try:
            tables = check(db, point, projections, link_at)
        except Refused as refused:
            report(str(refused))
            continue
        if tables is None:
            report(f"checkpoint {point.id} at position {point.position} ignored: taken "
                   "before the read models' definitions changed")
            continue
        return point, tables
    return None


def restore(db: Database, projections: Sequence[Projection], position: int,
            tables: dict[str, pa.Table]) -> None:
    """Replace the projections' tables with a checkpoint's and set their position, in
    one transaction; each table is bulk-loaded (`Tx.load_table`: on PostgreSQL `COPY`
    into the bare table, then its keys and indexes built over the rows)."""
    with db.transaction() as tx:
        create_positions(db, tx)
        for projection in projections:
            projection.drop_in(db, tx)
        for projection in projections:
            for table in projection.tables:
                tx.load_table(table.ddl(db, projection.prefix), projection.prefix + table.name,
                              table.columns, tables[table.name])
        tx.executemany(MOVE_POSITION, [(p.tracking_name, position) for p in projections])


def describe(point: Checkpoint) -> dict[str, Any]:
    return {"id": point.id, "position": point.position, "link": point.link,
            "rows": point.rows, "tables": len(point.parts)}
