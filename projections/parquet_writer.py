"""Crash-safe Parquet files for the dataset projection: schemas, parts, the manifest.

Layout under the dataset dir (one dataset per directory, hive partitions)::

    datasets/
      manifest.json                              position + projection state
      price_observations/date=2026-03-01/part-00000000000000000001-00000000000000001000.parquet
      stock_events/date=…/part-<first>-<last>.parquet
      job_runs/date=…/part-<first>-<last>.parquet
      price_changes/date=…/part-<first>-<last>.parquet
      job_states/date=…/part-<first>-<last>.parquet
      products_latest.parquet                    materialised latest row per product/option

A batch of envelopes (positions first..last) becomes at most one file per
dataset and date, named by the batch's range. Each file is written to a
`.tmp` name and renamed; the manifest is written (also temp + rename) only
after every file of the batch is in place. So the manifest position never
claims rows that are not on disk, and on restart any part whose `first` lies
beyond the manifest position (a crash between the renames and the manifest)
is deleted before the batch is replayed: rows are never lost or duplicated.

Compaction rewrites each *closed* date partition (older than the dataset's
newest date; the newest too once it has many parts) into one file sorted by (product, time) with small row groups,
so Parquet min/max statistics prune a one-product lookup to one row group per
day. It is named by the union of the merged ranges and renamed into place
before the old parts are deleted; a crash in between leaves parts whose range
lies inside the compacted file's, and `discard_superseded` deletes those.

`products_latest.parquet` materialises the latest `price_observations` row
per (product, pricing type, option) through a position kept in its metadata;
each refresh merges only the rows beyond it. Readers add the rows after that
position themselves, so a stale file is never wrong, only slower.
"""

from __future__ import annotations

import json
import os
import re
import shutil
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
#: compacted files are sorted by these columns (lookups filter on the first)
SORT_KEYS: dict[str, tuple[str, ...]] = {
    "price_observations": ("product_id", "observed_at", "position"),
    "stock_events": ("product_id", "occurred_at", "position"),
    "job_runs": ("store_id", "finished_at", "position"),
    "price_changes": ("product_id", "changed_at", "position"),
    "job_states": ("job_id", "changed_at", "position"),
}
#: a month file's order, where it differs from a date's: the one named query on
#: `price_changes` takes a time range, which a month sorted by product cannot prune
#: (rows of a date stay together, so each row group spans about a day)
MONTH_SORT_KEYS: dict[str, tuple[str, ...]] = {
    **SORT_KEYS, "price_changes": ("date", "product_id", "changed_at", "position"),
}
#: rows per row group of a compacted file: small enough that a product lookup
#: decompresses little, large enough to keep footers and scans cheap (measured)
ROW_GROUP_ROWS = 16_384
SORTED_BY = b"crawl_ledger.sorted_by"
#: parts after which the newest date is compacted although still open (~16 batches)
OPEN_DATE_PARTS = 16
#: the date column every file holds (the UTC date of its partition: the folder's name)
DATE = "date"
#: a dataset's files under its directory: date parts (`date=…/`) and month files (`month=…/`)
FILES = "*=*/part-*.parquet"
#: closed dates of the newest month wait for its month file until this many have closed
MONTH_ROLLUP_DAYS = 7
#: a month file's metadata: the date parts it took in, one "date=…/part-…" per line
MERGED = b"crawl_ledger.merged"
#: what a month roll-up's sort may hold in memory before it spills to disk
ROLLUP_MEMORY = "1GB"
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


def atomic_write_bytes(path: Path, data: bytes) -> None:
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)


def read_manifest(root: Path) -> Manifest:
    path = root / MANIFEST
    if not path.exists():
        return Manifest()
    data = json.loads(path.read_text())
    return Manifest(int(data["position"]), data.get("state"))


def write_manifest(root: Path, manifest: Manifest) -> None:
    text = json.dumps({"position": manifest.position, "state": manifest.state},
                      sort_keys=True, separators=(",", ":"))
    atomic_write_bytes(root / MANIFEST, text.encode())


def write_part(root: Path, dataset: str, date: str, first: int, last: int,
               rows: list[dict[str, Any]]) -> Path:
    """Write one batch's rows of one dataset and date: temp file, fsync, rename."""
    folder = root / dataset / f"date={date}"
    folder.mkdir(parents=True, exist_ok=True)
    table = pa.Table.from_pylist(rows, schema=DATASETS[dataset][0])
    table = table.append_column(DATE, pa.array([_day(date)] * len(rows), pa.date32()))
    return publish(root, table, folder / part_name(first, last), compression="zstd")


def file_schema(dataset: str) -> pa.Schema:
    """A dataset's columns as its files hold them: the rows' columns, then `date`."""
    return DATASETS[dataset][0].append(pa.field(DATE, pa.date32()))


def _day(date: str) -> Day:
    return Day.fromisoformat(date)


def parts(root: Path) -> list[Path]:
    """Every part file (and leftover temp file) of every dataset: dates, then months."""
    return sorted(p for name in DATASETS for pattern in ("date=*/part-*", "month=*/part-*")
                  for p in (root / name).glob(pattern))


def month_files(root: Path, dataset: str) -> list[Path]:
    return sorted((root / dataset).glob("month=*/part-*.parquet"))


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


def discard_superseded(root: Path) -> list[Path]:
    """Delete parts already copied into a bigger file: a part whose range lies inside
    another part of the same partition, and a date part a month file took in.

    Batch ranges never overlap, so only a compaction or a month roll-up interrupted
    between its rename and its deletes leaves such parts.
    """
    removed = []
    for folder in sorted({p.parent for p in parts(root) if PART.match(p.name)}):
        ranges = {p: part_range(p) for p in folder.glob("part-*.parquet")}
        for path, (first, last) in ranges.items():
            if any(o != (first, last) and o[0] <= first and last <= o[1]
                   for o in ranges.values()):
                path.unlink()
                removed.append(path)
    for name in DATASETS:
        for month in month_files(root, name):
            merged = (pq.read_schema(month).metadata or {}).get(MERGED, b"").decode()
            for relative in filter(None, merged.splitlines()):
                path = root / name / relative
                if path.exists():
                    path.unlink()
                    removed.append(path)
                    _remove_if_empty(path.parent)
    return removed


def _remove_if_empty(folder: Path) -> None:
    if folder.is_dir() and not any(folder.iterdir()):
        folder.rmdir()


def _is_compacted(files: list[Path]) -> bool:
    return len(files) == 1 and SORTED_BY in (pq.read_schema(files[0]).metadata or {})


def compact_partition(folder: Path, dataset: str) -> Path | None:
    """Rewrite one date partition as one sorted file; None if it already is one."""
    files = sorted(folder.glob("part-*.parquet"))
    if not files or _is_compacted(files):
        return None
    schema, keys = file_schema(dataset), SORT_KEYS[dataset]
    table = pa.concat_tables(pq.ParquetFile(f).read().cast(schema) for f in files)
    table = table.sort_by([(k, "ascending") for k in keys])
    table = table.replace_schema_metadata({SORTED_BY: ",".join(keys).encode()})
    ranges = [part_range(f) for f in files]
    final = folder / part_name(min(r[0] for r in ranges), max(r[1] for r in ranges))
    publish(folder.parent.parent, table, final, compression="zstd",
            row_group_size=ROW_GROUP_ROWS)
    for old in files:
        if old != final:
            old.unlink()
    return final


def compact(root: Path, dataset: str | None = None, months: bool = True) -> list[Path]:
    """Compact every closed date partition (all but each dataset's newest date).

    The newest (open) date is compacted too once it holds `OPEN_DATE_PARTS`
    parts: rewriting it now and then bounds what a lookup of today pays, and
    later parts just join it at the next compaction. Then closed dates are merged
    into month files (`roll_up`; not with `months=False`). Idempotent; the caller holds the writer's lock
    (only committed parts exist). An interrupted compaction or merge is finished
    first (`discard_superseded`), so no part is merged twice.
    """
    discard_superseded(root)
    written = []
    for name in [dataset] if dataset else list(DATASETS):
        folders = sorted(f for f in (root / name).glob("date=*") if f.is_dir())
        if folders and len(list(folders[-1].glob("part-*.parquet"))) < OPEN_DATE_PARTS:
            folders.pop()
        for folder in folders:
            path = compact_partition(folder, name)
            if path is not None:
                written.append(path)
        if months:
            written.extend(roll_up(root, name))
    return written


def roll_up(root: Path, dataset: str) -> list[Path]:
    """Merge closed dates into one file per month (`month=YYYY-MM/`), sorted by
    `MONTH_SORT_KEYS` (as a compacted date, but `price_changes` by date first).

    A lookup pays per file (a footer, a row group): one product's history over 30
    daily files took ~70 ms, over one month file ~20. Every closed date of an
    earlier month is merged; the closed dates of the newest month wait until
    `MONTH_ROLLUP_DAYS` of them have closed (each merge rewrites the month so far:
    ~5 a month). The newest date is never merged. A date part written after its
    date was merged (an event that arrived late) joins the month at the next merge.
    The merged file is renamed into place before the parts it took in are deleted;
    its metadata lists them, so `discard_superseded` finishes an interrupted merge.
    """
    folders = sorted(f for f in (root / dataset).glob("date=*") if f.is_dir())
    if len(folders) < 2:
        return []
    newest_month = folders[-1].name[len("date="):][:7]
    months: dict[str, list[Path]] = {}
    for folder in folders[:-1]:
        months.setdefault(folder.name[len("date="):][:7], []).append(folder)
    written = []
    for month, days in sorted(months.items()):
        files = [f for day in days for f in sorted(day.glob("part-*.parquet"))]
        if files and (month < newest_month or len(days) >= MONTH_ROLLUP_DAYS):
            written.append(_merge_month(root, dataset, month, files))
    return written


def _merge_month(root: Path, dataset: str, month: str, files: list[Path]) -> Path:
    folder = root / dataset / f"month={month}"
    folder.mkdir(parents=True, exist_ok=True)
    before = sorted(folder.glob("part-*.parquet"))
    ranges = [part_range(f) for f in (*before, *files)]
    final = folder / part_name(min(r[0] for r in ranges), max(r[1] for r in ranges))
    tmp = final.with_name(final.name + ".tmp")
    columns = ", ".join(f'"{c}"' for c in file_schema(dataset).names)
    rows = f"SELECT {columns} FROM read_parquet({_sql_list([*before, *files])}, " \
           "hive_partitioning = false)"
    keys = MONTH_SORT_KEYS[dataset]
    merged = "\n".join(f"{f.parent.name}/{f.name}" for f in files)
    spill = root / ".spill"
    with duckdb.connect(":memory:") as con:
        con.execute("SET TimeZone = 'UTC'")
        con.execute(f"SET memory_limit = '{ROLLUP_MEMORY}'")
        con.execute(f"SET temp_directory = {_sql_text(str(spill))}")
        con.execute(f"COPY ({rows} ORDER BY {', '.join(keys)}) "
                    f"TO {_sql_text(str(tmp))} (FORMAT parquet, COMPRESSION zstd, "
                    f"ROW_GROUP_SIZE {ROW_GROUP_ROWS}, KV_METADATA "
                    f"{{'{SORTED_BY.decode()}': {_sql_text(','.join(keys))}, "
                    f"'{MERGED.decode()}': {_sql_text(merged)}}})")
    shutil.rmtree(spill, ignore_errors=True)
    publish_written(root, tmp, final)
    for old in (*before, *files):
        if old != final:
            old.unlink()
            _remove_if_empty(old.parent)
    return final


def latest_through(root: Path) -> int | None:
    """The position `products_latest.parquet` covers, or None if there is none."""
    path = root / LATEST
    if not path.exists():
        return None
    return int((pq.read_schema(path).metadata or {})[THROUGH])


def _sql_text(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _sql_list(paths: list[Path]) -> str:
    return "[" + ", ".join(_sql_text(str(p)) for p in paths) + "]"


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
    selects = [f"SELECT * FROM read_parquet({_sql_text(str(root / LATEST))})"
               ] if through is not None else []
    if files:
        selects.append(f"SELECT * FROM read_parquet({_sql_list(files)}, hive_partitioning = false) "
                       f"WHERE position > {through or 0}")
    with duckdb.connect(":memory:") as con:
        con.execute("SET TimeZone = 'UTC'")
        table = con.sql(LATEST_SQL.format(rows=" UNION ALL BY NAME ".join(selects))).to_arrow_table()
    table = table.replace_schema_metadata({THROUGH: str(position).encode()})
    publish(root, table, root / LATEST, compression="zstd", row_group_size=ROW_GROUP_ROWS)
    return True
