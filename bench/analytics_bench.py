"""DuckDB over 10M synthetic price observations: each named query, side by side.

    .venv/bin/python bench/analytics_bench.py [--rows 10000000] [--dir /tmp/analytics-bench]

Setups already prepared in `--dir` are reused (each is compacted again: a no-op).

Generates the datasets as the dataset writer leaves them before compaction
(vectorised numpy/pyarrow): per date, `PARTS_PER_DAY` batch-sized parts in
time order, plus proportional `stock_events`, `job_runs` and the
`price_changes` the ledger's `PriceChanged` events would give. Two copies are then
compacted with the writer's own `compact` (one without month files) + `refresh_latest`
(timed). Every query runs in one process against four setups:

- `raw`: the uncompacted parts, current views;
- `window views`: compacted files, but `price_changes` / `products_latest` as the
  window views over every observation (no materialised tables);
- `dates only`: each date compacted, no month file (`compact(months=False)`), current views;
- `compacted`: compacted files, current views (what `analytics refresh` leaves): the
  29 closed dates merged into one month file (their month is the newest, and more than
  `MONTH_ROLLUP_DAYS` of its dates have closed), the newest date its own file.

Each cell is the median of 3 on one connection; `cold` is the first call on a
fresh connection (what a one-shot CLI command pays). DESIGN targets: one
product's history < 100 ms, daily aggregates < 2 s.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute
import pyarrow.parquet as pq

from analytics import (
    as_of,
    connect,
    crawl_health,
    out_of_stock_durations,
    price_changes_in,
    price_history,
    store_summary,
)
from projections.compaction import compact
from projections.parquet_writer import FILES, part_name, refresh_latest, with_date

T0 = datetime(2026, 1, 1, tzinfo=UTC)
DAYS = 30
STORES = 200
PRODUCTS = 50_000
US_PER_DAY = 86_400_000_000
PARTS_PER_DAY = 64  # ~5k rows each, like the writer's 5000-event batches
SCALE = 10_000  # DECIMAL(18,4)


def _ids(prefix: str, count: int) -> np.ndarray:
    return np.array([f"{prefix}-{n:08d}" for n in range(count)], dtype=object)


def _day_table(rng: np.random.Generator, day: int, rows: int, names: dict[str, np.ndarray],
               base: np.ndarray) -> pa.Table:
    start = int((T0 + timedelta(days=day)).timestamp() * 1_000_000)
    observed = np.sort(start + (rng.integers(0, 24, rows) * 3_600_000_000))  # log order
    product = rng.integers(0, PRODUCTS, rows)
    store = product % STORES
    drift = 1 + 0.1 * np.sin(day / 5 + product) * (rng.random(rows) < 0.3)
    cents = np.round(base[product] * drift).astype(np.int64)
    price = pa.array(cents * (SCALE // 100), pa.int64())
    return pa.table({
        "observed_at": pa.array(observed, pa.int64()).cast(pa.timestamp("us", tz="UTC")),
        "store_id": pa.array(names["store"][store], pa.string()),
        "store_name": pa.array(names["store_name"][store], pa.string()),
        "product_id": pa.array(names["product"][product], pa.string()),
        "provider_product_id": pa.array(names["product"][product], pa.string()),
        "name": pa.array(names["product_name"][product], pa.string()),
        "brand": pa.array(names["brand"][product % 20], pa.string()),
        "category": pa.array(names["category"][product % 8], pa.string()),
        "option": pa.array(np.where(product % 3 == 0, "1g", "default"), pa.string()),
        "price": _money(price),
        "special_price": pa.nulls(rows, pa.decimal128(18, 4)),
        "currency": pa.array(np.full(rows, "USD"), pa.string()),
        "pricing_type": pa.array(np.full(rows, "regular"), pa.string()),
        "availability": pa.array(np.where(rng.random(rows) < 0.05, "out_of_stock", "in_stock")),
        "quantity": pa.array(rng.integers(0, 40, rows), pa.int64()),
        "event_id": pa.array(np.char.add("e", np.arange(rows).astype(str)), pa.string()),
        "position": pa.array(day * rows + np.arange(rows), pa.int64()),
        "job_id": pa.array(names["store"][store], pa.string()),
        "attempt": pa.array(np.ones(rows, np.int32), pa.int32()),
        "extractor_version": pa.array(np.full(rows, "1"), pa.string()),
        "content_hash": pa.array(np.full(rows, "h"), pa.string()),
    })


def _money(scaled: pa.Array) -> pa.Array:
    """int64 in units of 1/10000 -> DECIMAL(18,4), exactly."""
    return pa.Array.from_buffers(pa.decimal128(18, 4), len(scaled),
                                 [None, pa.py_buffer(_int128(scaled))])


def _int128(scaled: pa.Array) -> bytes:
    values = scaled.to_numpy()
    wide = np.zeros((len(values), 2), dtype=np.int64)
    wide[:, 0] = values
    wide[:, 1] = np.where(values < 0, -1, 0)
    return wide.tobytes()


def _side_tables(rng: np.random.Generator, day: int, names: dict[str, np.ndarray]) -> \
        tuple[pa.Table, pa.Table]:
    start = int((T0 + timedelta(days=day)).timestamp() * 1_000_000)
    n = 2_000
    product = rng.integers(0, PRODUCTS, n)
    kinds = np.array(["went_out_of_stock", "back_in_stock", "missed"], dtype=object)
    stock = pa.table({
        "occurred_at": pa.array(start + rng.integers(0, US_PER_DAY, n), pa.int64())
        .cast(pa.timestamp("us", tz="UTC")),
        "store_id": pa.array(names["store"][product % STORES], pa.string()),
        "store_name": pa.array(names["store_name"][product % STORES], pa.string()),
        "product_id": pa.array(names["product"][product], pa.string()),
        "provider_product_id": pa.array(names["product"][product], pa.string()),
        "name": pa.array(names["product_name"][product], pa.string()),
        "event_type": pa.array(kinds[rng.integers(0, 3, n)], pa.string()),
        "reason": pa.array(np.full(n, "misses"), pa.string()),
        "consecutive_misses": pa.array(np.ones(n, np.int32), pa.int32()),
        "job_id": pa.array(names["store"][product % STORES], pa.string()),
        "event_id": pa.array(np.char.add("s", np.arange(n).astype(str)), pa.string()),
        "position": pa.array(day * n + np.arange(n), pa.int64()),
    })
    runs = STORES * 6
    store = np.arange(runs) % STORES
    leased = start + np.arange(runs) * (US_PER_DAY // runs)
    failed = rng.random(runs) < 0.07
    jobs = pa.table({
        "job_id": pa.array(names["store"][store], pa.string()),
        "kind": pa.array(np.full(runs, "catalog"), pa.string()),
        "store_id": pa.array(names["store"][store], pa.string()),
        "store_name": pa.array(names["store_name"][store], pa.string()),
        "attempt": pa.array(np.ones(runs, np.int32), pa.int32()),
        "worker": pa.array(np.full(runs, "w1"), pa.string()),
        "leased_at": pa.array(leased, pa.int64()).cast(pa.timestamp("us", tz="UTC")),
        "finished_at": pa.array(leased + 2_000_000, pa.int64()).cast(pa.timestamp("us", tz="UTC")),
        "outcome": pa.array(np.where(failed, "failed", "succeeded"), pa.string()),
        "error_kind": pa.array(np.where(failed, np.array("timeout", object), np.array(None, object)), pa.string()),
        "message": pa.array(np.where(failed, np.array("timed out", object), np.array(None, object)), pa.string()),
        "duration": pa.array(np.full(runs, 2.0)),
        "http_status": pa.array(np.where(failed, 0, 200).astype(np.int32), pa.int32()),
        "items": pa.array(np.full(runs, 250), pa.int64()),
        "lease_event_id": pa.array(np.char.add("l", np.arange(runs).astype(str)), pa.string()),
        "event_id": pa.array(np.char.add("j", np.arange(runs).astype(str)), pa.string()),
        "position": pa.array(day * runs + np.arange(runs), pa.int64()),
    })
    return stock, jobs


#: what the old views computed per query (kept to measure the change side by side)
WINDOW_VIEWS = (
    """CREATE OR REPLACE VIEW products_latest AS SELECT * FROM price_observations
    QUALIFY row_number() OVER (PARTITION BY product_id, pricing_type, option
                               ORDER BY observed_at DESC, position DESC) = 1""",
    """CREATE OR REPLACE VIEW price_changes AS
    WITH ordered AS (
        SELECT *, lag(price) OVER w AS old_price, lag(special_price) OVER w AS old_special_price,
               lag(observed_at) OVER w AS previous_at
        FROM price_observations WHERE price IS NOT NULL
        WINDOW w AS (PARTITION BY product_id, pricing_type, option ORDER BY observed_at, position))
    SELECT observed_at AS changed_at, previous_at, store_id, store_name, product_id, name, brand,
           category, option, pricing_type, currency, old_price, price AS new_price,
           old_special_price, special_price AS new_special_price,
           price - old_price AS abs_change,
           round(100 * (price - old_price) / old_price, 2)::DOUBLE AS pct_change,
           event_id, position, job_id
    FROM ordered WHERE old_price IS NOT NULL AND price <> old_price""",
)
#: the PriceChanged rows the ledger would record for the generated observations
CHANGES_SQL = """
SELECT observed_at AS changed_at, lag(observed_at) OVER w AS previous_at, store_id, store_name,
       product_id, provider_product_id, name, brand, category, option, pricing_type, currency,
       lag(price) OVER w AS old_price, price AS new_price, NULL::DECIMAL(18,4) AS old_special_price,
       NULL::DECIMAL(18,4) AS new_special_price, event_id, position, job_id
FROM price_observations
WINDOW w AS (PARTITION BY product_id, pricing_type, option ORDER BY observed_at, position)
QUALIFY lag(price) OVER w <> price
ORDER BY position
"""


def _write_parts(root: Path, dataset: str, table: pa.Table, date: str, parts: int) -> None:
    folder = root / dataset / f"date={date}"
    folder.mkdir(parents=True, exist_ok=True)
    table = with_date(table, date)
    for chunk in np.array_split(np.arange(table.num_rows), parts):
        if len(chunk):
            piece = table.slice(int(chunk[0]), len(chunk))
            first, last = piece["position"][0].as_py(), piece["position"][-1].as_py()
            pq.write_table(piece, folder / part_name(first, last), compression="zstd")


def generate(root: Path, rows: int) -> None:
    rng = np.random.default_rng(42)
    names = {
        "store": _ids("store", STORES), "store_name": _ids("Store", STORES),
        "product": _ids("product", PRODUCTS), "product_name": _ids("Product", PRODUCTS),
        "brand": _ids("Brand", 20), "category": _ids("Category", 8),
    }
    base = rng.integers(500, 9_000, PRODUCTS).astype(np.float64)
    per_day = rows // DAYS
    for day in range(DAYS):
        date = (T0 + timedelta(days=day)).strftime("%Y-%m-%d")
        stock, jobs = _side_tables(rng, day, names)
        _write_parts(root, "price_observations", _day_table(rng, day, per_day, names, base),
                     date, PARTS_PER_DAY)
        _write_parts(root, "stock_events", stock, date, 4)
        _write_parts(root, "job_runs", jobs, date, 4)
    _generate_changes(root)


def _generate_changes(root: Path) -> None:
    con = connect(root)
    changes = con.sql(CHANGES_SQL).to_arrow_table()
    con.close()
    dates = pa.compute.strftime(changes["changed_at"], "%Y-%m-%d").to_numpy(zero_copy_only=False)
    for date in sorted(set(dates)):
        _write_parts(root, "price_changes", changes.filter(pa.array(dates == date)), date,
                     PARTS_PER_DAY // 8)


def prepare(base: Path, rows: int) -> tuple[Path, Path, Path]:
    raw, daily, compacted = (base / f"{name}-{rows}" for name in ("raw", "daily", "compacted"))
    if not (raw / "price_observations").exists():
        start = time.perf_counter()
        generate(raw, rows)
        print(f"generated {rows:,} observations in {time.perf_counter() - start:.1f}s")
    for root, months in ((daily, False), (compacted, True)):
        if not (root / "price_observations").exists():
            shutil.copytree(raw, root)
        start = time.perf_counter()
        written = compact(root, months=months)  # idempotent: the writer's own step
        middle = time.perf_counter()
        refreshed = refresh_latest(root, 1 << 62)
        if written or refreshed:
            print(f"{root.name}: compaction {middle - start:.1f}s ({len(written)} files), "
                  f"products_latest {time.perf_counter() - middle:.1f}s (first build; later "
                  "ones are incremental)")
    return raw, daily, compacted


def timed(open_con: Callable[[], duckdb.DuckDBPyConnection],
          run: Callable[[duckdb.DuckDBPyConnection], Any]) -> tuple[float, float, int]:
    """(cold: first call on a fresh connection, median of 3 on it, rows)."""
    con = open_con()
    samples, rows = [], 0
    for _ in range(3):
        start = time.perf_counter()
        rows = run(con).num_rows
        samples.append(time.perf_counter() - start)
    con.close()
    return samples[0], statistics.median(samples), rows


def queries() -> dict[str, tuple[Callable[[duckdb.DuckDBPyConnection], Any], float]]:
    day = T0 + timedelta(days=DAYS // 2)
    product = "product-00012345"
    return {
        "price_history (one product)": (lambda c: price_history(c, product), 0.1),
        "as_of (one product)": (lambda c: as_of(c, product, day), 0.1),
        "price_changes_in (1 day, top 10)":
            (lambda c: price_changes_in(c, day, day + timedelta(days=1)), 2),
        "store_summary": (lambda c: store_summary(c), 2),
        "out_of_stock_durations": (lambda c: out_of_stock_durations(c), 2),
        "crawl_health": (lambda c: crawl_health(c), 2),
        "daily average price per category": (lambda c: c.sql(
            "SELECT date, category, avg(price) FROM price_observations GROUP BY ALL")
            .to_arrow_table(), 2),
    }


def _window_views(root: Path) -> duckdb.DuckDBPyConnection:
    con = connect(root)
    for statement in WINDOW_VIEWS:
        con.execute(statement)
    return con


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--dir", type=Path, default=Path("/tmp/analytics-bench"))
    args = parser.parse_args()
    raw, daily, compacted = prepare(args.dir, args.rows)
    setups: dict[str, Callable[[], duckdb.DuckDBPyConnection]] = {
        "raw": lambda: connect(raw), "window views": lambda: _window_views(compacted),
        "dates only": lambda: connect(daily), "compacted": lambda: connect(compacted),
    }
    con = connect(compacted)
    total = con.sql("SELECT count(*) FROM price_observations").fetchall()[0][0]
    files = {name: len(list(root.glob("price_observations/" + FILES)))
             for name, root in (("raw", raw), ("daily", daily), ("compacted", compacted))}
    print(f"\n{total:,} price observations, {DAYS} daily partitions "
          f"({files['raw']} raw parts; dates only: {files['daily']} compacted files; "
          f"compacted: {files['compacted']} files, the closed dates merged into a month file)\n"
          "median of 3 on one connection / first call on a fresh one (cold)\n")
    print(f"{'query':<34} {'target':>7} " + " ".join(f"{n + ' med/cold':>22}" for n in setups)
          + "  rows")
    for label, (run, target) in queries().items():
        cells, rows = [], 0
        for open_con in setups.values():
            cold, median, rows = timed(open_con, run)
            cells.append(f"{median * 1000:>9.0f}/{cold * 1000:>6.0f}ms "
                         f"{'ok' if median < target else '--':>4}")
        print(f"{label:<34} {'<' + str(target) + 's':>7} " + " ".join(cells) + f"  {rows}")


if __name__ == "__main__":
    main()
