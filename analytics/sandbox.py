"""Analyst SQL in a sandbox: queries over the dataset views and nothing else.

`sandboxed(dataset_dir)` opens an in-memory DuckDB with the views, then closes it
to the outside world before any analyst SQL runs:

- file access only below the dataset directory (`allowed_directories`) with
  `enable_external_access` off: no `read_csv('/etc/passwd')`, no other database,
  no extension download;
- no temporary directory (`temp_directory` empty, `max_temp_directory_size`
  0): DuckDB would otherwise allow its `.tmp` under the working directory and
  spill there;
- the configuration locked (`lock_configuration`): no `SET` can undo the above;
- memory and threads capped.

`run_query` runs exactly one statement that `analytics.statement_check`
accepts (a query, or a plain `EXPLAIN` of one), so nothing can write, even in
the dataset directory. It then streams the result in Arrow batches and stops:

- past `max_rows` rows or `max_bytes` bytes of result (the result is never
  materialised whole first);
- past the memory ceiling (`analytics.memory_cap`): DuckDB's `memory_limit`
  plus the result budget plus a margin, enforced by the operating system,
  because DuckDB does not count the strings a pipeline builds;
- past the time limit (the query is interrupted).

Every refusal and error is a `QueryRefused` with a one-line message.

`analytics shell` is not this: it hands the user their own, unrestricted DuckDB.
Anything that exposes SQL to others must use this module.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path

import duckdb
import pyarrow as pa

from analytics.memory_cap import capped_memory
from analytics.statement_check import QueryRefused, checked_query, one_line
from analytics.views import create_views

__all__ = ["QueryRefused", "SandboxLimits", "run_query", "sandboxed"]

_MB = 1 << 20
#: room beside DuckDB's limit and the result: Python objects, batches in flight,
#: DuckDB's own allocations outside its buffer manager
_HEADROOM = 256 * _MB
#: rows per Arrow batch pulled from DuckDB (its vector size)
_BATCH_ROWS = 2048


@dataclass(frozen=True)
class SandboxLimits:
    memory: str = "1GB"
    threads: int = 2
    seconds: float = 60.0
    max_rows: int = 1_000_000
    max_bytes: int = 128 * _MB

    def memory_bytes(self) -> int:
        number, unit = _size(self.memory)
        return int(float(number) * (_MB if unit == "MB" else 1 << 30))

    def ceiling(self) -> int:
        """What one query may add to the process: DuckDB's limit, the result, a margin."""
        return self.memory_bytes() + self.max_bytes + _HEADROOM


def sandboxed(dataset_dir: Path | str, limits: SandboxLimits = SandboxLimits()
              ) -> duckdb.DuckDBPyConnection:
    """An in-memory connection with the views, sealed as the module docstring says."""
    root = Path(dataset_dir).resolve()
    number, unit = _size(limits.memory)
    con = duckdb.connect(":memory:")
    con.execute("SET TimeZone = 'UTC'")
    con.execute("SET parquet_metadata_cache = true")
    create_views(con, root)
    con.execute("SET temp_directory = ''")
    con.execute("SET max_temp_directory_size = '0B'")
    con.execute("SET allowed_directories = [$1]", [f"{root}/"])
    con.execute("SET enable_external_access = false")
    con.execute("SET autoinstall_known_extensions = false")
    con.execute("SET autoload_known_extensions = false")
    con.execute("SET allow_community_extensions = false")
    con.execute(f"SET memory_limit = '{number}{unit}'")
    con.execute(f"SET threads = {int(limits.threads)}")
    con.execute("SET lock_configuration = true")
    return con


def run_query(con: duckdb.DuckDBPyConnection, query: str,
              limits: SandboxLimits = SandboxLimits()) -> pa.Table:
    """The result of one read-only query on a `sandboxed` connection, within `limits`."""
    sql = checked_query(con, query)
    timer = threading.Timer(limits.seconds, con.interrupt)
    timer.start()
    try:
        with capped_memory(limits.ceiling()):
            return _stream(con, sql, limits)
    except duckdb.InterruptException:
        raise QueryRefused(_interrupted(limits)) from None
    except (duckdb.OutOfMemoryException, MemoryError):
        raise QueryRefused(_out_of_memory(limits)) from None
    except duckdb.Error as error:
        raise QueryRefused(one_line(error)) from None
    finally:
        timer.cancel()


def _streamed_error(error: Exception, limits: SandboxLimits) -> str:
    """A DuckDB error raised while Arrow pulled a batch arrives as text only."""
    text = one_line(error)
    if text.startswith("Out of Memory Error"):
        return _out_of_memory(limits)
    if text.startswith("INTERRUPT Error"):
        return _interrupted(limits)
    return text


def _interrupted(limits: SandboxLimits) -> str:
    return f"query interrupted after the {limits.seconds:g}s limit"


def _out_of_memory(limits: SandboxLimits) -> str:
    return (f"query stopped at the sandbox's memory limit ({limits.memory});"
            " select fewer or smaller values, or aggregate")


def _stream(con: duckdb.DuckDBPyConnection, sql: str, limits: SandboxLimits) -> pa.Table:
    """Pull the result batch by batch, stopping as soon as it is over a budget."""
    relation = con.sql(sql)
    if relation is None:
        return pa.table({})
    reader = relation.to_arrow_reader(_BATCH_ROWS)
    try:
        return _within_budget(reader, limits)
    except (pa.ArrowException, OSError) as error:  # DuckDB's error, passed on by Arrow as text
        raise QueryRefused(_streamed_error(error, limits)) from None
    finally:
        reader.close()


def _within_budget(reader: pa.RecordBatchReader, limits: SandboxLimits) -> pa.Table:
    batches, rows, size = [], 0, 0
    for batch in reader:
        rows, size = rows + batch.num_rows, size + batch.nbytes
        if rows > limits.max_rows:
            raise QueryRefused(f"more than {limits.max_rows} rows is over the row limit;"
                               " add a LIMIT or aggregate")
        if size > limits.max_bytes:
            raise QueryRefused(f"more than {limits.max_bytes // _MB} MB of result is over the"
                               " size limit; select fewer columns or rows, or aggregate")
        batches.append(batch)
    return pa.Table.from_batches(batches, schema=reader.schema)


def _size(text: str) -> tuple[str, str]:
    cleaned = text.strip().upper()
    number, unit = cleaned[:-2], cleaned[-2:]
    if not number.replace(".", "", 1).isdigit() or unit not in ("MB", "GB"):
        raise ValueError(f"memory limit {text!r}: use e.g. 512MB or 2GB")
    return number, unit
