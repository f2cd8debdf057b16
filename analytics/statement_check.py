"""Which analyst SQL may run in the sandbox, decided by DuckDB's own parser.

Allowed: exactly one query — a statement DuckDB parses as `SELECT` and can
serialise as one (`json_serialize_sql`: `SELECT`, `WITH`, `FROM`, `VALUES`,
`DESCRIBE`, `SUMMARIZE`, `SHOW`) — or a plain `EXPLAIN` of such a query.
Everything else is refused before it runs: `COPY`, `ATTACH`, `INSTALL`/`LOAD`,
`SET`, `PRAGMA`, `CALL`, DDL, DML, and `EXPLAIN ANALYZE` (which executes its
statement, so `EXPLAIN ANALYZE COPY … TO 'file'` would write).

The text is never matched with patterns: statements come from
`extract_statements`, the `EXPLAIN` keyword and its operand from DuckDB's
tokenizer, and the operand is checked again as a query of its own.
"""

from __future__ import annotations

import json
from typing import Any

import duckdb

__all__ = ["QueryRefused", "checked_query"]

_ALLOWED = "only a query may run here (SELECT, WITH, FROM, DESCRIBE, SUMMARIZE, or EXPLAIN of one)"


class QueryRefused(ValueError):
    """The statement is not allowed, or the query failed; the message is one line."""


def checked_query(con: duckdb.DuckDBPyConnection, text: str) -> str:
    """The SQL to run for `text`, if it is one allowed statement; else `QueryRefused`."""
    statement = _single_statement(con, text)
    if statement.type == duckdb.StatementType.SELECT:
        _require_serialisable_select(con, text)
        return text
    if statement.type == duckdb.StatementType.EXPLAIN:
        return "EXPLAIN " + _explained_query(con, text)
    raise QueryRefused(f"{_ALLOWED}; {_type_name(statement.type)} statements are refused")


def _single_statement(con: duckdb.DuckDBPyConnection, text: str) -> duckdb.Statement:
    try:
        statements = con.extract_statements(text)
    except duckdb.Error as error:
        raise QueryRefused(one_line(error)) from None
    if len(statements) != 1:
        raise QueryRefused(f"one statement at a time, got {len(statements)}")
    return statements[0]


def _require_serialisable_select(con: duckdb.DuckDBPyConnection, text: str) -> None:
    rows = con.execute("SELECT json_serialize_sql($1)", [text]).fetchall()
    verdict: dict[str, Any] = json.loads(rows[0][0]) if rows else {"error": True}
    if verdict.get("error") or len(verdict.get("statements") or ()) != 1:
        reason = verdict.get("error_message") or "not a single query"
        raise QueryRefused(f"{_ALLOWED}; {one_line(reason)}")


def _explained_query(con: duckdb.DuckDBPyConnection, text: str) -> str:
    """The query after a leading `EXPLAIN`, itself checked; `EXPLAIN ANALYZE` is refused."""
    tokens = [(start, kind) for start, kind in duckdb.tokenize(text)
              if kind != duckdb.token_type.comment]
    first, operand = tokens[0][0], tokens[1][0] if len(tokens) > 1 else len(text)
    if text[first:first + len("explain")].lower() != "explain":
        raise QueryRefused(f"{_ALLOWED}; could not find the EXPLAIN keyword")
    if text[operand:operand + len("analyze")].lower() in ("analyze", "analyse"):
        raise QueryRefused("EXPLAIN ANALYZE runs its statement and is refused; use plain EXPLAIN")
    body = text[operand:]
    try:
        if _single_statement(con, body).type != duckdb.StatementType.SELECT:
            raise QueryRefused(f"{_ALLOWED}; EXPLAIN may only explain a query")
    except QueryRefused:
        raise QueryRefused(f"{_ALLOWED}; EXPLAIN may only explain a query, without options"
                           ) from None
    _require_serialisable_select(con, body)
    return body


def _type_name(kind: object) -> str:
    return str(getattr(kind, "name", kind))


def one_line(error: object) -> str:
    text = " ".join(str(error).split())
    return text[:500] or type(error).__name__
