"""Full-text search over a read-model table's text columns (`Table.search`).

The columns are listed most telling first (a product's name before its description);
a word found in an earlier column ranks higher.

- SQLite: an FTS5 table `<table>_fts` over the table's own rows (external content,
  `unicode61` tokens without diacritics, prefix indexes of 2 and 3 characters),
  kept in step by triggers created with the table, so every projection write and
  rebuild keeps it exact; ranked by bm25 with per-column weights, equal scores in
  index order (rowid). Without a store filter the ranking reads the index alone and
  only the best rows are joined to their table (`ReadModel.search_products`).
  `index_faults` asks FTS5 to check it against its table.
- PostgreSQL: a generated column `search_doc` (`setweight(to_tsvector('simple', …))`
  per column, weights A–D: the `simple` configuration, no language's stemming: the
  shops are in many languages) with a GIN index; ranked by `ts_rank` on the stored
  vectors. Being a column of the table, it is compared with a rebuild like the
  others. Diacritics are kept ("creme" does not find "Crème"; SQLite folds them):
  `unaccent` is an extension a read-model database may not have.

A query is the words of the user's text (letters and digits; everything else
separates words), all of which must match, each in any column, the last one as a
prefix ("blue dre" finds "Blue Dream"). Words are passed as quoted terms, never as
query syntax, so no text can make a query fail or mean something else.
"""

from __future__ import annotations

import re
import sqlite3
from dataclasses import dataclass
from typing import Any

from domain.errors import InvalidInput

__all__ = ["DOC", "SearchQuery", "bm25_weights", "index_faults", "search_ddl", "search_objects",
           "search_table"]

_WORD = re.compile(r"[^\W_]+", re.UNICODE)  # letters and digits
#: words of a query at most (the rest are ignored)
MAX_WORDS = 12
#: characters of a query at most
MAX_LENGTH = 200
#: the PostgreSQL column holding a row's search document
DOC = "search_doc"
#: PostgreSQL weight classes by column position, and the bm25 weights matching them
_CLASSES = "ABBCD"
_BM25 = {"A": 10.0, "B": 4.0, "C": 2.0, "D": 1.0}


def _class(position: int) -> str:
    return _CLASSES[min(position, len(_CLASSES) - 1)]


def bm25_weights(columns: tuple[str, ...]) -> str:
    """The weights argument list of `bm25(fts, …)` for the indexed columns."""
    return ", ".join(str(_BM25[_class(n)]) for n in range(len(columns)))


def search_table(table: str) -> str:
    """The SQLite FTS5 table indexing `table`."""
    return f"{table}_fts"


def search_ddl(dialect: str, table: str, columns: tuple[str, ...]) -> list[str]:
    """The statements creating the full-text index of `table` (idempotent), run in
    the transaction creating the table, so the index covers every row it ever has."""
    return (_sqlite_ddl if dialect == "sqlite" else _postgres_ddl)(table, columns)


def search_objects(dialect: str, table: str) -> set[str]:
    """The names of what `search_ddl` creates (`Database.object_names`' spelling: a
    PostgreSQL column as `table.column`)."""
    if dialect == "sqlite":
        fts = search_table(table)
        return {fts, f"{fts}_insert", f"{fts}_delete", f"{fts}_update"}
    return {f"{table}.{DOC}", f"{table}_{DOC}"}


def _sqlite_ddl(table: str, columns: tuple[str, ...]) -> list[str]:
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


def _postgres_ddl(table: str, columns: tuple[str, ...]) -> list[str]:
    document = " || ".join(f"setweight(to_tsvector('simple', coalesce({c}, '')), "
                           f"'{_class(n)}')" for n, c in enumerate(columns))
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


@dataclass(frozen=True)
class SearchQuery:
    """A user's search text as words (see the module docstring)."""

    words: tuple[str, ...]

    @classmethod
    def parse(cls, text: str) -> SearchQuery:
        if len(text) > MAX_LENGTH:
            raise InvalidInput(f"search text is longer than {MAX_LENGTH} characters")
        words = tuple(w.lower() for w in _WORD.findall(text))[:MAX_WORDS]
        if not words:
            raise InvalidInput("search text has no word to look for (letters or digits)")
        return cls(words)

    def fts5(self) -> str:
        """An FTS5 MATCH expression: quoted terms, the last one a prefix."""
        *whole, last = self.words
        return " ".join([*(f'"{w}"' for w in whole), f'"{last}"*'])

    def tsquery(self) -> str:
        """A `to_tsquery('simple', …)` text: quoted lexemes ANDed, the last a prefix."""
        *whole, last = self.words
        return " & ".join([*(f"'{w}'" for w in whole), f"'{last}':*"])

    def like_patterns(self) -> list[str]:
        """`LIKE` patterns, one per word (`%`, `_` and `\\` escaped): what a search
        without an index does (the benchmark's peer)."""
        return ["%" + re.sub(r"([%_\\])", r"\\\1", w) + "%" for w in self.words]
