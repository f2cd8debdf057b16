"""`_SQLiteTx.upsert` writes many rows a statement: the tables must end as one statement a
row (`Tx.upsert`, `executemany`) leaves them, the full-text index consistent with them."""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from eventstore.database import SQLiteDatabase, Tx, _pieces
from projections.framework import Table
from projections.search import index_faults, search_table

DOCS = Table(
    name="docs", key=("doc_id",),
    columns={"doc_id": "text", "shop": "text", "title": "text", "body": "text", "n": "int"},
    search=("title", "body"),
)
PLAIN = Table(name="plain", key=("a", "b"), columns={"a": "text", "b": "int", "v": "real"})
WORDS = ["blue", "dream", "crème", "brûlée", "kush", "haze", "gelato", "runtz", "og", "sour"]


def batches(seed: int) -> list[list[tuple[Any, ...]]]:
    """Batches of docs rows: new keys, keys written before, a key twice in one batch."""
    rng = random.Random(seed)
    out = []
    for size in (1, 2, 3, 127, 128, 129, 300, 5, 0, 64):
        rows = [(f"d{rng.randrange(400)}", f"s{rng.randrange(3)}",
                 " ".join(rng.choice(WORDS) for _ in range(3)),
                 " ".join(rng.choice(WORDS) for _ in range(rng.randrange(30))) or None,
                 rng.randrange(1000)) for _ in range(size)]
        out.append(rows)
    return out


def write(db: SQLiteDatabase, table: Table, rows_batches: list[list[tuple[Any, ...]]],
          one_a_statement: bool) -> list[tuple[Any, ...]]:
    with db.transaction() as tx:
        for statement in table.ddl(db, ""):
            tx.execute(statement)
    for rows in rows_batches:
        with db.transaction() as tx:
            upsert = Tx.upsert.__get__(tx) if one_a_statement else tx.upsert
            upsert(table.name, table.key, table.columns, rows)
    with db.transaction() as tx:
        assert index_faults(tx, "sqlite", table.name) is None if table.search else True
        found = tx.execute(f"SELECT * FROM {table.name} ORDER BY {', '.join(table.key)}")
        if table.search:  # what a search finds, word by word
            for word in WORDS:
                hits = tx.execute(f"SELECT doc_id FROM {search_table(table.name)} s JOIN "
                                  f"{table.name} d ON d.rowid = s.rowid WHERE "
                                  f"{search_table(table.name)} MATCH ? ORDER BY doc_id",
                                  [f'"{word}"'])
                found.append({"word": word, "hits": [h["doc_id"] for h in hits]})
    return [tuple(row.values()) for row in found]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_many_rows_a_statement_leave_the_table_and_its_index_as_one_a_statement(
        tmp_path: Path, seed: int) -> None:
    data = batches(seed)
    many = write(SQLiteDatabase(tmp_path / "many.sqlite"), DOCS, data, one_a_statement=False)
    one = write(SQLiteDatabase(tmp_path / "one.sqlite"), DOCS, data, one_a_statement=True)
    assert many == one
    assert len([row for row in many if len(row) == 5]) > 100


def test_a_key_twice_in_one_batch_ends_with_its_last_row(tmp_path: Path) -> None:
    rows = [("x", 1, 1.0), ("y", 1, 2.0), ("x", 1, 3.0), ("x", 2, 4.0), ("x", 1, 5.0)]
    found = write(SQLiteDatabase(tmp_path / "r.sqlite"), PLAIN, [rows], one_a_statement=False)
    assert found == [("x", 1, 5.0), ("x", 2, 4.0), ("y", 1, 2.0)]


def test_statements_stay_within_sqlite_s_variable_limit(tmp_path: Path) -> None:
    db = SQLiteDatabase(tmp_path / "limit.sqlite")
    db._conn.setlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER, 20)  # 4 rows of 5 columns
    data = batches(4)
    many = write(db, DOCS, data, one_a_statement=False)
    one = write(SQLiteDatabase(tmp_path / "one.sqlite"), DOCS, data, one_a_statement=True)
    assert many == one


def test_pieces_are_powers_of_two_within_both_bounds() -> None:
    for count in range(0, 700):
        for most, fit in ((128, 10_000), (128, 20), (4, 3), (128, 1)):
            pieces = list(_pieces(count, most, fit))
            assert sum(pieces) == count
            assert all(p & (p - 1) == 0 and p <= max(1, min(most, fit)) for p in pieces)
            assert pieces == sorted(pieces, reverse=True)
    assert list(_pieces(300, 128, 10_000)) == [128, 128, 32, 8, 4]
