"""Compaction of the Parquet datasets: closed dates as sorted files, then month files.

Compaction rewrites each *closed* date partition (older than the dataset's newest
date; the newest too once it has `OPEN_DATE_PARTS` parts) into one file sorted by
(product, time) with small row groups, so Parquet min/max statistics prune a
one-product lookup to one row group per date. It is named by the union of the
merged ranges and renamed into place before the old parts are deleted; a crash in
between leaves parts whose range lies inside the compacted file's, and
`discard_superseded` deletes those. Closed dates are then merged into one file per
month (`roll_up`).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

from projections.checksums import publish, publish_written
from projections.parquet_writer import (
    DATASETS,
    PART,
    ROW_GROUP_ROWS,
    file_schema,
    part_name,
    part_range,
    parts,
    sql_list,
    sql_text,
)

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
SORTED_BY = b"crawl_ledger.sorted_by"
#: parts after which the newest date is compacted although still open (~16 batches)
OPEN_DATE_PARTS = 16
#: closed dates of the newest month wait for its month file until this many have closed
MONTH_ROLLUP_DAYS = 7
#: a month file's metadata: the date parts it took in, one "date=…/part-…" per line
MERGED = b"crawl_ledger.merged"
#: what a month roll-up's sort may hold in memory before it spills to disk
ROLLUP_MEMORY = "1GB"


def month_files(root: Path, dataset: str) -> list[Path]:
    return sorted((root / dataset).glob("month=*/part-*.parquet"))


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
    into month files (`roll_up`; not with `months=False`). Idempotent; the caller
    holds the writer's lock (only committed parts exist). An interrupted compaction
    or merge is finished first (`discard_superseded`), so no part is merged twice.
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
    rows = f"SELECT {columns} FROM read_parquet({sql_list([*before, *files])}, " \
           "hive_partitioning = false)"
    keys = MONTH_SORT_KEYS[dataset]
    merged = "\n".join(f"{f.parent.name}/{f.name}" for f in files)
    spill = root / ".spill"
    with duckdb.connect(":memory:") as con:
        con.execute("SET TimeZone = 'UTC'")
        con.execute(f"SET memory_limit = '{ROLLUP_MEMORY}'")
        con.execute(f"SET temp_directory = {sql_text(str(spill))}")
        con.execute(f"COPY ({rows} ORDER BY {', '.join(keys)}) "
                    f"TO {sql_text(str(tmp))} (FORMAT parquet, COMPRESSION zstd, "
                    f"ROW_GROUP_SIZE {ROW_GROUP_ROWS}, KV_METADATA "
                    f"{{'{SORTED_BY.decode()}': {sql_text(','.join(keys))}, "
                    f"'{MERGED.decode()}': {sql_text(merged)}}})")
    shutil.rmtree(spill, ignore_errors=True)
    publish_written(root, tmp, final)
    for old in (*before, *files):
        if old != final:
            old.unlink()
            _remove_if_empty(old.parent)
    return final


