"""Table definitions rendered for each engine: the read models' tables, their
full-text indexes, and the check of an index against its table.

Projections say what their tables are (name, typed columns, key, indexes, searched
columns: `projections.framework.Table`); this module says how each engine creates
them, so the SQL dialects' DDL lives with the adapters (`eventstore.database`).

Full-text index (`Table.search`, columns most telling first):

- SQLite: an FTS5 table `<table>_fts` over the table's own rows (external content,
  `unicode61` tokens without diacritics, prefix indexes of 2 and 3 characters),
  kept in step by triggers created with the table, so every write and rebuild
  keeps it exact.
- PostgreSQL: a generated column `search_doc` (`setweight(to_tsvector('simple', …))`
  per column, weights A–D by position) with a GIN index.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["DOC", "TYPES", "column_type", "index_faults", "search_objects", "search_table", "table_ddl",
           "weight_class"]

TYPES = {
    "sqlite": {"text": "TEXT", "int": "INTEGER", "real": "REAL", "json": "TEXT", "blob": "BLOB"},
    "postgres": {"text": "TEXT", "int": "BIGINT", "real": "DOUBLE PRECISION", "json": "TEXT",
                 "blob": "BYTEA"},
}
#: the PostgreSQL column holding a row's search document
DOC = "search_doc"
#: PostgreSQL weight classes by column position
_CLASSES = "ABBCD"


def column_type(dialect: str, kind: str) -> str:
    """The engine's type for a column kind (`text`, `int`, `real`, `json`)."""
    return TYPES[dialect][kind]


def weight_class(position: int) -> str:
    """The weight class (A–D) of the searched column at `position`."""
    return _CLASSES[min(position, len(_CLASSES) - 1)]


def search_table(table: str) -> str:
    """The SQLite FTS5 table indexing `table`."""
    return f"{table}_fts"


def table_ddl(dialect: str, name: str, columns: Mapping[str, str], key: Sequence[str],
              indexes: Sequence[Sequence[str]] = (), search: Sequence[str] = ()) -> list[str]:
    """The statements creating table `name` (idempotent): columns by kind, the primary
    key, an index per entry of `indexes`, and the full-text index of `search`, run in
    one transaction so the index covers every row the table ever has."""
    cols = ", ".join(f"{c} {column_type(dialect, t)}" for c, t in columns.items())
    statements = [f"CREATE TABLE IF NOT EXISTS {name} ({cols}, PRIMARY KEY ({', '.join(key)}))"]
    for index in indexes:
        statements.append(f"CREATE INDEX IF NOT EXISTS {name}_{'_'.join(index)} "
                          f"ON {name} ({', '.join(index)})")
    if search:
        ddl = _sqlite_search if dialect == "sqlite" else _postgres_search
        statements.extend(ddl(name, tuple(search)))
    return statements


def _sqlite_search(table: str, columns: tuple[str, ...]) -> list[str]:
    fts = search_table(table)
    names = ", ".join(columns)
    new = ", ".join(f"new.{c}" for c in columns)
    old = ", ".join(f"old.{c}" for c in columns)
    delete = f"INSERT INTO {fts} ({fts}, rowid, {names}) VALUES ('delete', old.rowid, {old});"
    insert = f"INSERT INTO {fts} (rowid, {names}) VALUES (new.rowid, {new});"
    return [
        f"CREATE VIRTUAL TABLE IF NOT EXISTS {fts} USING fts5({names}, content='{table}', "
        "tokenize='unicode61 remove_diacritics 2', prefix='2 3')",
        f"CREATE TRIGGER IF NOT EXISTS {fts}_insert AFTER INSERT ON {table} BEGIN {insert} END",
        f"CREATE TRIGGER IF NOT EXISTS {fts}_delete AFTER DELETE ON {table} BEGIN {delete} END",
        f"CREATE TRIGGER IF NOT EXISTS {fts}_update AFTER UPDATE OF {names} ON {table} "
        f"BEGIN {delete} {insert} END",
    ]


def _postgres_search(table: str, columns: tuple[str, ...]) -> list[str]:
    document = " || ".join(f"setweight(to_tsvector('simple', coalesce({c}, '')), "
                           f"'{weight_class(n)}')" for n, c in enumerate(columns))
    return [
        f"ALTER TABLE {table} ADD COLUMN IF NOT EXISTS {DOC} tsvector "
        f"GENERATED ALWAYS AS ({document}) STORED",
        f"CREATE INDEX IF NOT EXISTS {table}_{DOC} ON {table} USING GIN ({DOC})",
    ]


def index_faults(tx: Any, dialect: str, table: str) -> str | None:
    """Why `table`'s full-text index disagrees with its rows, or None. SQLite: FTS5's
    own integrity check of the index against its content table; PostgreSQL's
    generated column cannot disagree."""
    if dialect != "sqlite":
        return None
    fts = search_table(table)
    try:
        tx.execute(f"INSERT INTO {fts} ({fts}, rank) VALUES ('integrity-check', 1)")
    except sqlite3.DatabaseError as error:
        return f"{fts}: {error}"
    return None


def search_objects(dialect: str, table: str) -> set[str]:
    """The names of what a table's full-text index consists of (`Database.object_names`'
    spelling: a PostgreSQL column as `table.column`)."""
    if dialect == "sqlite":
        fts = search_table(table)
        return {fts, f"{fts}_insert", f"{fts}_delete", f"{fts}_update"}
    return {f"{table}.{DOC}", f"{table}_{DOC}"}
