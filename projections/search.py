"""Full-text search over a read-model table's text columns (`Table.search`).

- SQLite: an FTS5 table `<table>_fts` over the table's own rows (external content,
  `unicode61` tokens without diacritics, prefix indexes of 2 and 3 characters),
  kept in step by triggers on every insert, update and delete of the table, so each
  projection write, rebuild or migration keeps it exact; ranked by bm25.
- PostgreSQL: a table `<table>_search` (key, `doc tsvector`) with a GIN index, kept
  by a trigger on the table (`to_tsvector('simple', …)` of the columns: no
  language's stemming, the shops are in many languages); ranked by `ts_rank` on the
  stored vectors, so a common word's thousands of matches are ranked without
  re-reading their rows. Diacritics are kept ("creme" does not find "Crème"; SQLite
  folds them): `unaccent` is an extension a read-model database may not have.

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

_WORD = re.compile(r"[^\W_]+", re.UNICODE)  # letters and digits
#: words of a query at most (the rest are ignored)
MAX_WORDS = 12
#: characters of a query at most
MAX_LENGTH = 200


def search_table(dialect: str, table: str) -> str:
    """The table holding `table`'s full-text index."""
    return f"{table}_fts" if dialect == "sqlite" else f"{table}_search"


def _document(columns: tuple[str, ...]) -> str:
    """The PostgreSQL text indexed: the columns, each coalesced, space-separated."""
    return " || ' ' || ".join(f"coalesce({c}, '')" for c in columns)


def search_ddl(dialect: str, table: str, key: str, columns: tuple[str, ...]) -> list[str]:
    """The statements creating the full-text index of `table` (idempotent)."""
    return (_sqlite_ddl if dialect == "sqlite" else _postgres_ddl)(table, key, columns)


def _sqlite_ddl(table: str, key: str, columns: tuple[str, ...]) -> list[str]:
    fts = search_table("sqlite", table)
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
        # index them once; a complete index holds a document (`_docsize`) per row
        f"INSERT INTO {fts} ({fts}) SELECT 'rebuild' WHERE (SELECT count(*) FROM "
        f"{fts}_docsize) <> (SELECT count(*) FROM {table})",
    ]


def _postgres_ddl(table: str, key: str, columns: tuple[str, ...]) -> list[str]:
    index = search_table("postgres", table)
    document = _document(tuple(f"NEW.{c}" for c in columns))
    return [
        f"CREATE TABLE IF NOT EXISTS {index} ({key} text PRIMARY KEY, doc tsvector NOT NULL)",
        f"CREATE INDEX IF NOT EXISTS {index}_doc ON {index} USING GIN (doc)",
        f"""CREATE OR REPLACE FUNCTION {index}_sync() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            IF TG_OP = 'DELETE' THEN
                DELETE FROM {index} WHERE {key} = OLD.{key};
                RETURN OLD;
            END IF;
            INSERT INTO {index} ({key}, doc) VALUES (NEW.{key}, to_tsvector('simple', {document}))
            ON CONFLICT ({key}) DO UPDATE SET doc = excluded.doc;
            RETURN NEW;
        END $$""",
        f"CREATE OR REPLACE TRIGGER {index}_sync AFTER INSERT OR DELETE OR UPDATE OF "
        f"{', '.join(columns)} ON {table} FOR EACH ROW EXECUTE FUNCTION {index}_sync()",
        # rows written before the index existed (a read model from an older version)
        f"INSERT INTO {index} ({key}, doc) SELECT t.{key}, to_tsvector('simple', "
        f"{_document(tuple(f't.{c}' for c in columns))}) FROM {table} t "
        f"WHERE NOT EXISTS (SELECT 1 FROM {index} i WHERE i.{key} = t.{key})",
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
