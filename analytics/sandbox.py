"""Analyst SQL in a sandbox: queries over the dataset views and nothing else.

`sandboxed(dataset_dir)` opens an in-memory DuckDB with the views, then closes it
to the outside world before any analyst SQL runs:

- file access only below the dataset directory (`allowed_directories`) with
  `enable_external_access` off: no `read_csv('/etc/passwd')`, no other database,
  no extension download, no write anywhere;
- the configuration locked (`lock_configuration`): no `SET` can undo the above;
- memory and threads capped, no spilling to disk.

`run_query` accepts exactly one statement, a query (`SELECT`, `WITH`, `FROM`,
`DESCRIBE`, `SUMMARIZE`, `EXPLAIN`); `COPY`, `ATTACH`, `INSTALL`/`LOAD`, `SET`,
`PRAGMA`, `CALL`, DDL and DML are refused before they run. A query still running
after the time limit is interrupted. Every refusal and error is a `QueryRefused`
with a one-line message.

`analytics shell` is not this: it hands the user their own, unrestricted DuckDB.
Anything that exposes SQL to others (HTTP) must use this module.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path

import duckdb
import pyarrow as pa

from analytics.views import create_views

__all__ = ["QueryRefused", "SandboxLimits", "run_query", "sandboxed"]

_QUERIES = frozenset({duckdb.StatementType.SELECT, duckdb.StatementType.EXPLAIN})


class QueryRefused(ValueError):
    """The statement is not allowed, or the query failed; the message is one line."""


@dataclass(frozen=True)
class SandboxLimits:
    memory: str = "1GB"
    threads: int = 2
    seconds: float = 60.0
    max_rows: int = 1_000_000


def sandboxed(dataset_dir: Path | str, limits: SandboxLimits = SandboxLimits()
              ) -> duckdb.DuckDBPyConnection:
    """An in-memory connection with the views, sealed as the module docstring says."""
    root = Path(dataset_dir).resolve()
    con = duckdb.connect(":memory:")
    con.execute("SET TimeZone = 'UTC'")
    con.execute("SET parquet_metadata_cache = true")
    create_views(con, root)
    con.execute("SET allowed_directories = [$1]", [f"{root}/"])
    con.execute("SET enable_external_access = false")
    con.execute("SET autoinstall_known_extensions = false")
    con.execute("SET autoload_known_extensions = false")
    con.execute(f"SET memory_limit = '{_size(limits.memory)}'")
    con.execute(f"SET threads = {int(limits.threads)}")
    con.execute("SET max_temp_directory_size = '0B'")
    con.execute("SET lock_configuration = true")
    return con


def run_query(con: duckdb.DuckDBPyConnection, query: str,
              limits: SandboxLimits = SandboxLimits()) -> pa.Table:
    """The result of one read-only query on a `sandboxed` connection."""
    try:
        statements = con.extract_statements(query)
    except duckdb.Error as error:
        raise QueryRefused(_one_line(error)) from None
    if len(statements) != 1:
        raise QueryRefused(f"one statement at a time, got {len(statements)}")
    kind = statements[0].type
    if kind not in _QUERIES:
        name = getattr(kind, "name", str(kind))
        raise QueryRefused(f"only queries may run here (SELECT, WITH, FROM, DESCRIBE, EXPLAIN);"
                           f" {name} statements are refused")
    timer = threading.Timer(limits.seconds, con.interrupt)
    timer.start()
    try:
        relation = con.sql(query)
        table = relation.to_arrow_table() if relation is not None else pa.table({})
    except duckdb.InterruptException:
        raise QueryRefused(f"query interrupted after the {limits.seconds:g}s limit") from None
    except duckdb.Error as error:
        raise QueryRefused(_one_line(error)) from None
    finally:
        timer.cancel()
    if table.num_rows > limits.max_rows:
        raise QueryRefused(f"{table.num_rows} rows is over the {limits.max_rows}-row limit;"
                           " add a LIMIT or aggregate")
    return table


def _one_line(error: Exception) -> str:
    text = " ".join(str(error).split())
    return text[:500] or type(error).__name__


def _size(text: str) -> str:
    cleaned = text.strip().upper()
    if not cleaned[:-2].replace(".", "", 1).isdigit() or cleaned[-2:] not in ("MB", "GB"):
        raise ValueError(f"memory limit {text!r}: use e.g. 512MB or 2GB")
    return cleaned
