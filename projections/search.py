"""Full-text search over a read-model table's text columns (`Table.search`).

The columns are listed most telling first (a product's name before its description);
a word found in an earlier column ranks higher.

The index itself (SQLite: an FTS5 table `<table>_fts` kept in step by triggers;
PostgreSQL: a generated `search_doc` column with a GIN index) is created with its
table by the engine's adapter (`eventstore.ddl`). Ranking: SQLite by bm25 with
per-column weights, equal scores in index order (rowid), without a store filter
reading the index alone and joining only the best rows (`ReadModel.search_products`);
PostgreSQL by `ts_rank` on the stored vectors. The `simple` configuration, no
language's stemming: the shops are in many languages. PostgreSQL keeps diacritics
("creme" does not find "Crème"; SQLite folds them): `unaccent` is an extension a
read-model database may not have.

A query is the words of the user's text (letters and digits; everything else
separates words), all of which must match, each in any column, the last one as a
prefix ("blue dre" finds "Blue Dream"). Words are passed as quoted terms, never as
query syntax, so no text can make a query fail or mean something else.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from domain.errors import InvalidInput
from eventstore.ddl import DOC, index_faults, search_objects, search_table, weight_class

__all__ = ["DOC", "SearchQuery", "bm25_weights", "index_faults", "search_objects",
           "search_table"]

_WORD = re.compile(r"[^\W_]+", re.UNICODE)  # letters and digits
#: words of a query at most (the rest are ignored)
MAX_WORDS = 12
#: characters of a query at most
MAX_LENGTH = 200
#: bm25 weights matching the PostgreSQL weight classes (`eventstore.ddl.weight_class`)
_BM25 = {"A": 10.0, "B": 4.0, "C": 2.0, "D": 1.0}


def bm25_weights(columns: tuple[str, ...]) -> str:
    """The weights argument list of `bm25(fts, …)` for the indexed columns."""
    return ", ".join(str(_BM25[weight_class(n)]) for n in range(len(columns)))


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
