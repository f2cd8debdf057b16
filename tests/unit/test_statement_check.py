"""Which analyst SQL the sandbox runs, decided by DuckDB's parser; the memory ceiling."""

from __future__ import annotations

import resource

import duckdb
import pytest

from analytics.memory_cap import capped_memory
from analytics.statement_check import QueryRefused, checked_query

ALLOWED = {
    "SELECT 1": "SELECT 1",
    "  with x AS (SELECT 1 AS n) SELECT n FROM x": "  with x AS (SELECT 1 AS n) SELECT n FROM x",
    "FROM range(3)": "FROM range(3)",
    "DESCRIBE SELECT 1": "DESCRIBE SELECT 1",
    "SUMMARIZE SELECT 1": "SUMMARIZE SELECT 1",
    "EXPLAIN SELECT 1": "EXPLAIN SELECT 1",
    "/* plan */ explain -- of this\n SELECT 1": "EXPLAIN SELECT 1",
}

REFUSED = {
    "EXPLAIN ANALYZE COPY (SELECT 1) TO 'x.csv'": "EXPLAIN ANALYZE runs its statement",
    "explain /* c */ ANALYSE SELECT 1": "EXPLAIN ANALYZE runs its statement",
    "EXPLAIN ANALYZE SELECT 1": "EXPLAIN ANALYZE runs its statement",
    "EXPLAIN COPY (SELECT 1) TO 'x.csv'": "EXPLAIN may only explain a query",
    "EXPLAIN (FORMAT json) SELECT 1": "EXPLAIN may only explain a query",
    "EXPLAIN EXPLAIN SELECT 1": "Parser Error",
    "COPY (SELECT 1) TO 'x.csv'": "COPY statements are refused",
    "ATTACH 'x.db'": "ATTACH statements are refused",
    "SET threads = 8": "SET statements are refused",
    "CALL checkpoint()": "CALL statements are refused",
    "PIVOT (SELECT 1 AS a, 2 AS b) ON a USING sum(b)": "MULTI statements are refused",
    "SELECT 1; SELECT 2": "one statement at a time, got 2",
    "": "one statement at a time, got 0",
    "SELEC 1": "Parser Error",
}


@pytest.fixture
def con() -> duckdb.DuckDBPyConnection:
    return duckdb.connect(":memory:")


@pytest.mark.parametrize("text", list(ALLOWED))
def test_queries_are_allowed(con: duckdb.DuckDBPyConnection, text: str) -> None:
    assert checked_query(con, text) == ALLOWED[text]


@pytest.mark.parametrize("text", list(REFUSED))
def test_everything_else_is_refused_in_one_line(con: duckdb.DuckDBPyConnection, text: str) -> None:
    with pytest.raises(QueryRefused) as refused:
        checked_query(con, text)
    assert REFUSED[text] in str(refused.value) and "\n" not in str(refused.value)


def test_the_memory_ceiling_stops_an_allocation_and_is_lifted_afterwards() -> None:
    before = resource.getrlimit(resource.RLIMIT_DATA)
    with capped_memory(64 << 20) as capped, pytest.raises(MemoryError):
        assert capped
        bytearray(512 << 20)
    assert resource.getrlimit(resource.RLIMIT_DATA) == before
    assert len(bytearray(512 << 20)) == 512 << 20
