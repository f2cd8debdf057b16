"""Read-model rows as Arrow tables, and Arrow tables as CSV for PostgreSQL's COPY.

Column kinds are the read models' (`text`, `json`, `int`, `real`); CSV is PostgreSQL's:
an unquoted empty field is NULL, a quoted one (`""`) the empty string.
"""

from __future__ import annotations

import io
from collections.abc import Iterator, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.csv as pacsv

__all__ = ["from_csv", "schema", "to_arrow", "to_csv"]

_TYPES = {"int": pa.int64(), "real": pa.float64()}


def schema(columns: dict[str, str]) -> pa.Schema:
    return pa.schema([(name, _TYPES.get(kind, pa.string())) for name, kind in columns.items()])


def to_arrow(rows: Sequence[dict[str, Any]], columns: dict[str, str]) -> pa.Table:
    arrays = []
    for name, kind in columns.items():
        values = [row[name] for row in rows]
        if kind == "int":
            values = [None if v is None else int(v) for v in values]
        elif kind == "real":
            values = [None if v is None else float(v) for v in values]
        arrays.append(pa.array(values, _TYPES.get(kind, pa.string())))
    return pa.Table.from_arrays(arrays, schema=schema(columns))


def from_csv(data: bytes, columns: dict[str, str]) -> pa.Table:
    """PostgreSQL's `COPY … (FORMAT csv)` output as a table of `columns`' types."""
    if not data:
        return schema(columns).empty_table()
    return pacsv.read_csv(
        io.BytesIO(data),
        read_options=pacsv.ReadOptions(column_names=list(columns), block_size=16 << 20),
        parse_options=pacsv.ParseOptions(newlines_in_values=True),
        convert_options=pacsv.ConvertOptions(
            column_types=schema(columns), null_values=[""], strings_can_be_null=True,
            quoted_strings_can_be_null=False))


def to_csv(table: pa.Table, rows: int = 50_000) -> Iterator[bytes]:
    """The table as CSV for `COPY … FROM STDIN (FORMAT csv)`, in pieces of `rows`."""
    options = pacsv.WriteOptions(include_header=False, quoting_style="needed")
    for batch in table.to_batches(rows):
        sink = io.BytesIO()
        pacsv.write_csv(batch, sink, options)
        yield sink.getvalue()
