"""Crash-safe Parquet files for the dataset projection: schemas, parts, the manifest.

Layout under the dataset dir (one dataset per directory, a folder per date)::

    datasets/
      manifest.json                              position + projection state (an export of its
                                                 row in the side table dataset_manifests)
      dataset-id                                 the directory's key in that table
      price_observations/date=2026-03-01/part-00000000000000000001-00000000000000001000.parquet
      stock_events/date=…/part-<first>-<last>.parquet
      job_runs/date=…/part-<first>-<last>.parquet
      price_changes/date=…/part-<first>-<last>.parquet
      job_states/date=…/part-<first>-<last>.parquet
      <dataset>/month=2026-02/part-<first>-<last>.parquet   closed dates, merged
      products_latest.parquet                    materialised latest row per product/option

A batch of envelopes (positions first..last) becomes at most one file per
dataset and date, named by the batch's range. Each file is written to a
`.tmp` name and renamed; the manifest is written (also temp + rename) only
after every file of the batch is in place. So the manifest position never
claims rows that are not on disk, and on restart any part whose `first` lies
beyond the manifest position (a crash between the renames and the manifest)
is deleted before the batch is replayed: rows are never lost or duplicated.

Compaction (`projections.compaction`) rewrites closed dates as sorted files and
merges them into month files (`month=YYYY-MM/`); every file holds its rows' `date`.

`products_latest.parquet` materialises the latest `price_observations` row
per (product, pricing type, option) through a position kept in its metadata;
each refresh merges only the rows beyond it. Readers add the rows after that
position themselves, so a stale file is never wrong, only slower.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from datetime import date as Day
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

from projections.checksums import publish, publish_written

MANIFEST = "manifest.json"
PART = re.compile(r"^part-(\d+)-(\d+)\.parquet$")
#: money: 18 digits, 4 after the point (prices are quantised to this, never floats)
MONEY = pa.decimal128(18, 4)
UTC_TS = pa.timestamp("us", tz="UTC")

PRICE_OBSERVATIONS = pa.schema([
    ("observed_at", UTC_TS), ("store_id", pa.string()), ("store_name", pa.string()),
    ("product_id", pa.string()), ("provider_product_id", pa.string()), ("name", pa.string()),
    ("brand", pa.string()), ("category", pa.string()), ("option", pa.string()),
    ("price", MONEY), ("special_price", MONEY), ("currency", pa.string()),
    ("pricing_type", pa.string()), ("availability", pa.string()), ("quantity", pa.int64()),
    ("event_id", pa.string()), ("position", pa.int64()), ("job_id", pa.string()),
    ("attempt", pa.int32()), ("extractor_version", pa.string()), ("content_hash", pa.string()),
])
STOCK_EVENTS = pa.schema([
    ("occurred_at", UTC_TS), ("store_id", pa.string()), ("store_name", pa.string()),
    ("product_id", pa.string()), ("provider_product_id", pa.string()), ("name", pa.string()),
    ("event_type", pa.string()), ("reason", pa.string()), ("consecutive_misses", pa.int32()),
    ("job_id", pa.string()), ("event_id", pa.string()), ("position", pa.int64()),
])
JOB_RUNS = pa.schema([
    ("job_id", pa.string()), ("kind", pa.string()), ("store_id", pa.string()),
    ("store_name", pa.string()), ("attempt", pa.int32()), ("worker", pa.string()),
    ("leased_at", UTC_TS), ("finished_at", UTC_TS), ("outcome", pa.string()),
    ("error_kind", pa.string()), ("message", pa.string()), ("duration", pa.float64()),
    ("http_status", pa.int32()), ("items", pa.int64()), ("lease_event_id", pa.string()),
    ("event_id", pa.string()), ("position", pa.int64()),
])
PRICE_CHANGES = pa.schema([
    ("changed_at", UTC_TS), ("previous_at", UTC_TS), ("store_id", pa.string()),
    ("store_name", pa.string()), ("product_id", pa.string()),
    ("provider_product_id", pa.string()), ("name", pa.string()), ("brand", pa.string()),
    ("category", pa.string()), ("option", pa.string()), ("pricing_type", pa.string()),
    ("currency", pa.string()), ("old_price", MONEY), ("new_price", MONEY),
    ("old_special_price", MONEY), ("new_special_price", MONEY), ("event_id", pa.string()),
    ("position", pa.int64()), ("job_id", pa.string()),
])
JOB_STATES = pa.schema([
    ("changed_at", UTC_TS), ("job_id", pa.string()), ("kind", pa.string()),
    ("store_id", pa.string()), ("store_name", pa.string()), ("event_type", pa.string()),
    ("state", pa.string()), ("state_since", UTC_TS), ("next_run_at", UTC_TS),
    ("event_id", pa.string()), ("position", pa.int64()),
])
#: dataset name -> (schema, the timestamp column its date partition comes from)
DATASETS: dict[str, tuple[pa.Schema, str]] = {
    "price_observations": (PRICE_OBSERVATIONS, "observed_at"),
    "stock_events": (STOCK_EVENTS, "occurred_at"),
    "job_runs": (JOB_RUNS, "finished_at"),
    "price_changes": (PRICE_CHANGES, "changed_at"),
    "job_states": (JOB_STATES, "changed_at"),
}
#: rows per row group of a compacted file: small enough that a product lookup
#: decompresses little, large enough to keep footers and scans cheap (measured)
ROW_GROUP_ROWS = 16_384
#: the date column every file holds (the UTC date of its partition: the folder's name)
DATE = "date"
#: a dataset's files under its directory: date parts (`date=…/`) and month files (`month=…/`)
FILES = "*=*/part-*.parquet"
LATEST = "products_latest.parquet"
THROUGH = b"crawl_ledger.through_position"
#: the latest row per key: unnest(arg_max(row, (time, position))) is ~2x faster than a
#: row_number() window over 10M rows; positions are unique, so the winner is too
LATEST_SQL = """
SELECT unnest(arg_max(r, (r.observed_at, r.position)))
FROM ({rows}) AS r
GROUP BY r.product_id, r.pricing_type, r.option
ORDER BY ALL
"""


@dataclass(frozen=True)
class Manifest:
    """What the dataset dir holds: every event up to `position`, and the state after it."""

    position: int = 0
    state: dict[str, Any] | None = None


def timestamp(text: str) -> datetime:
    """An event's ISO-8601 time as a UTC datetime (a time without zone is UTC)."""
    moment = datetime.fromisoformat(text)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC)


def part_name(first: int, last: int) -> str:
    return f"part-{first:020d}-{last:020d}.parquet"


def read_manifest(root: Path) -> Manifest:
    path = root / MANIFEST
    if not path.exists():
        return Manifest()
    data = json.loads(path.read_text())
    return Manifest(int(data["position"]), data.get("state"))


def write_manifest(root: Path, manifest: Manifest, state: str | None = None) -> None:
    """Write the manifest's export atomically and record its sha256
    (`projections.manifest_check`); `state`: its state as compact JSON, if already made."""
    if state is None:
        state = json.dumps(manifest.state, sort_keys=True, separators=(",", ":"))
    text = f'{{"position":{int(manifest.position)},"state":{state}}}'
    tmp = root / (MANIFEST + ".tmp")
    tmp.write_bytes(text.encode())
    publish_written(root, tmp, root / MANIFEST)


def write_part(root: Path, dataset: str, date: str, first: int, last: int,
               rows: list[dict[str, Any]]) -> Path:
    """Write one batch's rows of one dataset and date: temp file, fsync, rename."""
    folder = root / dataset / f"date={date}"
    folder.mkdir(parents=True, exist_ok=True)
    table = with_date(pa.Table.from_pylist(rows, schema=DATASETS[dataset][0]), date)
    return publish(root, table, folder / part_name(first, last), compression="zstd")


def with_date(table: pa.Table, date: str) -> pa.Table:
    """A date's rows as its files hold them: `date` (YYYY-MM-DD) appended as a column."""
    return table.append_column(DATE, pa.array([Day.fromisoformat(date)] * table.num_rows,
                                              pa.date32()))


def file_schema(dataset: str) -> pa.Schema:
    """A dataset's columns as its files hold them: the rows' columns, then `date`."""
    return DATASETS[dataset][0].append(pa.field(DATE, pa.date32()))


def parts(root: Path) -> list[Path]:
    """Every part file (and leftover temp file) of every dataset: dates, then months."""
    return sorted(p for name in DATASETS for pattern in ("date=*/part-*", "month=*/part-*")
                  for p in (root / name).glob(pattern))


def data_files(root: Path, dataset: str) -> list[Path]:
    """The dataset's Parquet files, date parts and month files (`FILES` in a glob)."""
    return sorted((root / dataset).glob(FILES))


def part_range(path: Path) -> tuple[int, int]:
    match = PART.match(path.name)
    if match is None:
        raise ValueError(f"not a part file: {path}")
    return int(match.group(1)), int(match.group(2))


def discard_beyond(root: Path, position: int) -> list[Path]:
    """Delete temp files and parts of batches after `position` (an unfinished batch)."""
    removed = []
    for path in parts(root):
        match = PART.match(path.name)
        if match is None or int(match.group(1)) > position:
            path.unlink()
            removed.append(path)
    return removed


def write_batch(root: Path, first: int, last: int,
                rows: dict[str, dict[str, list[dict[str, Any]]]],
                after_files: Callable[[], None] | None = None) -> int:
    """Write every dataset/date of one batch, then (only then) the caller's manifest."""
    written = 0
    for dataset, by_date in rows.items():
        for date, items in sorted(by_date.items()):
            write_part(root, dataset, date, first, last, items)
            written += len(items)
    if after_files is not None:
        after_files()
    return written


def latest_through(root: Path) -> int | None:
    """The position `products_latest.parquet` covers, or None if there is none."""
    path = root / LATEST
    if not path.exists():
        return None
    return int((pq.read_schema(path).metadata or {})[THROUGH])


def sql_text(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def sql_list(paths: list[Path]) -> str:
    return "[" + ", ".join(sql_text(str(p)) for p in paths) + "]"


def refresh_latest(root: Path, position: int) -> bool:
    """Merge the observations after the materialised position into `products_latest`.

    The caller holds the writer's lock and `position` is the manifest's.
    Returns whether the file was (re)written.
    """
    through = latest_through(root)
    if through is not None and through >= position:
        return False
    files = [f for f in data_files(root, "price_observations")
             if through is None or part_range(f)[1] > through]
    if not files and through is None:
        return False
    selects = [f"SELECT * FROM read_parquet({sql_text(str(root / LATEST))})"
               ] if through is not None else []
    if files:
        selects.append(f"SELECT * FROM read_parquet({sql_list(files)}, hive_partitioning = false) "
                       f"WHERE position > {through or 0}")
    with duckdb.connect(":memory:") as con:
        con.execute("SET TimeZone = 'UTC'")
        table = con.sql(LATEST_SQL.format(rows=" UNION ALL BY NAME ".join(selects))).to_arrow_table()
    table = table.replace_schema_metadata({THROUGH: str(position).encode()})
    publish(root, table, root / LATEST, compression="zstd", row_group_size=ROW_GROUP_ROWS)
    return True
