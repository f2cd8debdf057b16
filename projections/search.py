"""Full-text search over a read-model table's text columns (`Table.search`).

- SQLite: an FTS5 table `<table>_fts` over the table's own rows (external content,
  `unicode61` tokens without diacritics, prefix indexes of 2 and 3 characters),
  kept in step by triggers on every insert, update and delete of the table, so each
  projection write, rebuild or migration keeps it exact; ranked by bm25.
- PostgreSQL: a GIN index on `to_tsvector('simple', …)` of the columns (the `simple`
  configuration: no language's stemming, the shops are in many languages); ranked
  by `ts_rank`.

A query is the words of the user's text (letters and digits; everything else
separates words), all of which must match, the last one as a prefix ("blue dre"
finds "Blue Dream"). Words are passed as quoted terms, never as query syntax, so
no text can make a query fail or mean something else.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from domain.errors import InvalidInput

__all__ = ["SearchQuery", "search_ddl", "search_table"]

_WORD = re.compile(r"\w+", re.UNICODE)
#: words of a query at most (the rest are ignored)
MAX_WORDS = 12
#: characters of a query at most
MAX_LENGTH = 200


def search_table(table: str) -> str:
    """The SQLite FTS5 table indexing `table`."""
    return f"{table}_fts"


def _document(columns: tuple[str, ...]) -> str:
    """The PostgreSQL text searched: the columns, each coalesced, space-separated."""
    return " || ' ' || ".join(f"coalesce({c}, '')" for c in columns)


def search_ddl(dialect: str, table: str, columns: tuple[str, ...]) -> list[str]:
    """The statements creating the full-text index of `table` (idempotent)."""
    if dialect != "sqlite":
        return [f"CREATE INDEX IF NOT EXISTS {table}_search ON {table} "
                f"USING GIN (to_tsvector('simple', {_document(columns)}))"]
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
        # rows written before the index existed (a read model from an older version):
        # index them once; an index already complete has as many rows as the table
        f"INSERT INTO {fts} ({fts}) SELECT 'rebuild' WHERE (SELECT count(*) FROM {fts}) "
        f"<> (SELECT count(*) FROM {table})",
    ]


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
        """`LIKE` patterns, one per word (`%`, `_` and `\\` escaped), for short texts
        such as store names that carry no index."""
        return ["%" + re.sub(r"([%_\\])", r"\\\1", w) + "%" for w in self.words]


def pg_document(columns: tuple[str, ...]) -> str:
    """The PostgreSQL expression the GIN index is built on (queries must repeat it)."""
    return f"to_tsvector('simple', {_document(columns)})"
