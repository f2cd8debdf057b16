"""Growth benchmark: does the ledger stay fast as the event log grows? (not a test)

    .venv/bin/python bench/growth_bench.py [--sizes 100000,1000000,10000000] [--keep]
                                           [--pg postgresql://postgres@127.0.0.1:5432/test]

For each size, a fresh PostgreSQL schema gets a fleet's history of that many events
(`growth_history.record_history`: real aggregates, mapper and recorder, big groups),
then, on that store:
- record: one 500-product catalog result through `record_success` (p50/p95 of 12);
- append: events/s while the history was recorded (`record_many`, 20 results a group);
- catch-up: the read models caught up from position 0 (events/s), reading the whole
  notification log ahead as the runner does (events/s), and a rebuild of every read
  model (events/s);
- `jobs show`, `products show --as-of`, `audit verify`: the CLI's own entry point,
  in process (its bootstrap included; no interpreter start), median of 5 (verify: once,
  and its hash chain alone, `projections.audit.verify`, once);
- DuckDB: the Parquet datasets caught up from 0, then `price_history` of one product
  and a daily average price per category (median of 3 on one connection);
- bytes: `pg_total_relation_size` of the events table (heap, TOAST, indexes) per event,
  and the share an `Observed` row takes of it (its own row bytes' share of the table,
  plus the indexes per row): the bytes of one unchanged observation; snapshots apart.
Every figure is printed next to the same figure at the smallest size, with the ratio;
then a year of the 1,000-store fleet (3 million events a day) at the measured bytes.
The relay is not measured here: it needs a Kafka broker (`bench/relay_bench.py`).
The schema and the data directory (Parquet datasets) are removed afterwards unless
`--keep`.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import replace
from datetime import timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import psycopg  # noqa: E402
from growth_history import T0, FleetShape, History, record_history  # noqa: E402

from analytics import connect  # noqa: E402
from analytics.queries import price_history  # noqa: E402
from domain import ids  # noqa: E402
from domain.values import CrawlSuccess  # noqa: E402
from ledger import cli  # noqa: E402
from ledger.bootstrap import Ledger, bootstrap  # noqa: E402
from ledger.settings import Settings  # noqa: E402
from projections import audit  # noqa: E402
from projections.datasets import DatasetWriter  # noqa: E402
from projections.rebuild import rebuild  # noqa: E402

#: observations a day of the 1,000-store fleet (500 products, 6 crawls a day)
FLEET_OBSERVATIONS_A_DAY = 1_000 * 500 * 6
DAILY_AVERAGE = "SELECT date, category, avg(price) FROM price_observations GROUP BY ALL"
Row = tuple[str, float, str]  # label, value, unit


def fleet_for(size: int) -> FleetShape:
    """Enough stores that a size is a few days of crawls (at most the 1,000 of a fleet)."""
    return FleetShape(stores=max(10, min(1000, size // 10_000)))


def timed(run: Callable[[], Any]) -> float:
    started = time.perf_counter()
    run()
    return time.perf_counter() - started


def median_of(count: int, run: Callable[[], Any]) -> float:
    return statistics.median(timed(run) for _ in range(count))


def run_cli(*argv: str) -> None:
    with contextlib.redirect_stdout(io.StringIO()) as out:
        code = cli.main(list(argv))
    if code != 0:
        raise SystemExit(f"crawl-ledger {' '.join(argv)} exited {code}: {out.getvalue()[-500:]}")


def measure_record(ledger: Ledger, history: History, store: int = 0,
                   rounds: int = 12) -> tuple[float, float]:
    """p50/p95 (s) of one 500-product result of a store recorded through `record_success`."""
    app, job, catalog = ledger.app, history.jobs[store], history.catalogs[store]
    times = []
    for n in range(rounds):
        now = history.last + timedelta(days=1) + fleet_for(0).interval * n
        task = app.lease(job, "bench", 600, now)
        outcome = CrawlSuccess(200, task.url, "shopify", "shopify/1", f"bench{n}",
                               observations=catalog.crawl())
        started = time.perf_counter()
        app.record_success(job, task.lease_id, outcome, now)
        times.append(time.perf_counter() - started)
    steady = sorted(times[1:])
    return statistics.median(steady), steady[max(int(len(steady) * 0.95) - 1, 0)]


#: a stored row's bytes besides its state and topic: tuple header (24) and line pointer
#: (4), originator id (16), version (8), notification id (8)
ROW_OVERHEAD = 60
SIGHTINGS_TOPIC = "%Sightings.Recorded"


def measure_bytes(pg: str, schema: str, table: str) -> dict[str, float]:
    """Bytes a stored event, an observation and an unchanged one take, indexes included.

    The table's bytes (heap and TOAST) are shared out by each row's own bytes (its
    state as stored, `pg_column_size`: compressed and TOASTed where PostgreSQL did,
    its topic and `ROW_OVERHEAD`), the indexes' bytes by rows. An unchanged
    observation's bytes are its crawl's `Sightings.Recorded` row's share divided by
    the products in it; every observation's, the whole table's bytes divided by the
    observations (`Observed` rows plus sighted products)."""
    name = f'"{schema}"."{table}"'
    with psycopg.connect(pg, autocommit=True) as conn:
        conn.execute(f"VACUUM ANALYZE {name}")
        total, heap, indexes = conn.execute(
            f"SELECT pg_total_relation_size('{name}'), pg_table_size('{name}'), "
            f"pg_indexes_size('{name}')").fetchone()  # type: ignore[misc]
        rows = {kind: (n, row_bytes or 0, state or 0) for kind, n, row_bytes, state in conn.execute(
            f"SELECT CASE WHEN topic LIKE '%Product.Observed' THEN 'observed' "
            f"WHEN topic LIKE '{SIGHTINGS_TOPIC}' THEN 'sightings' ELSE 'other' END, count(*), "
            f"sum(pg_column_size(state) + pg_column_size(topic) + {ROW_OVERHEAD}), "
            f"sum(pg_column_size(state)) FROM {name} GROUP BY 1").fetchall()}
        sighted = conn.execute(
            f"SELECT coalesce(sum(json_array_length(convert_from(state, 'UTF8')::json "
            f"-> 'products')), 0) FROM {name} WHERE topic LIKE '{SIGHTINGS_TOPIC}'"
        ).fetchone()[0]  # type: ignore[index]
        snapshots = conn.execute(
            f"SELECT pg_total_relation_size(format('%I.%I', '{schema}', table_name)) FROM "
            f"information_schema.tables WHERE table_schema = '{schema}' "
            "AND table_name LIKE '%snapshots'").fetchone()
    count = sum(r[0] for r in rows.values())
    all_bytes = sum(r[1] for r in rows.values())

    def share(kind: str) -> float:
        n, row_bytes, _ = rows.get(kind, (0, 0, 0))
        return heap * row_bytes / all_bytes + indexes * n / count

    observed = rows.get("observed", (0, 0, 0))
    sightings = rows.get("sightings", (0, 0, 0))
    observations = observed[0] + sighted
    return {"events": count, "observed": observed[0], "sighted": sighted,
            "per_event": total / count, "per_observation": total / max(observations, 1),
            "per_unchanged": share("sightings") / max(sighted, 1),
            "per_observed_row": share("observed") / max(observed[0], 1),
            "observed_state": observed[2] / max(observed[0], 1),
            "sightings_state": sightings[2] / max(sightings[0], 1),
            "table_bytes": total, "snapshot_bytes": snapshots[0] if snapshots else 0}


def measure_reads(ledger: Ledger) -> tuple[float, float]:
    """Reading the whole log ahead (events/s) and a rebuild of every read model (events/s)."""
    started = time.perf_counter()
    count = sum(len(batch) for batch in ledger.source.batches(0, 1000))
    read = count / (time.perf_counter() - started)
    started = time.perf_counter()
    rebuilt = rebuild(ledger.source, ledger.db, ledger.projections)
    return read, rebuilt / (time.perf_counter() - started)


def measure_duckdb(ledger: Ledger, product: str) -> tuple[float, float, float]:
    """The datasets caught up from 0 (events/s), then the two queries' medians (s)."""
    writer = DatasetWriter(ledger.data_dir, ledger.source)
    started = time.perf_counter()
    count = writer.catch_up()
    rate = count / (time.perf_counter() - started)
    con = connect(writer.root)
    try:
        history = median_of(3, lambda: price_history(con, product).num_rows)
        daily = median_of(3, lambda: con.sql(DAILY_AVERAGE).to_arrow_table())
    finally:
        con.close()
    return rate, history, daily


def measure_size(pg: str, size: int, keep: bool, compact: bool = True) -> list[Row]:
    schema = f"growth_{uuid.uuid4().hex[:8]}"
    data = Path(tempfile.mkdtemp(prefix="crawl-ledger-growth-"))
    store = f"{pg}?schema={schema}"
    ledger = bootstrap(Settings(data_dir=data, store=store))
    ledger.app.options = replace(ledger.app.options, compact_sightings=compact)
    try:
        shape = fleet_for(size)
        print(f"\n{size:,} events: {shape.stores} stores x {shape.products} products, "
              f"{shape.crawls_per_day} crawls a day; schema {schema}", flush=True)
        history = record_history(ledger, size, shape, progress=_progress(size))
        print(f"  recorded {history.events:,} events in {history.crawls:,} crawls, "
              f"{history.seconds:.0f} s", flush=True)
        caught = timed(ledger.catch_up)
        read, rebuilt = measure_reads(ledger)
        p50, p95 = measure_record(ledger, history)
        product = str(ids.product_id(history.stores[1], "p7"))
        os.environ.update(LEDGER_STORE=store, LEDGER_DATA_DIR=str(data))
        as_of = (T0 + (history.last - T0) / 2).isoformat()
        jobs_show = median_of(5, lambda: run_cli("jobs", "show", history.jobs[1]))
        products_as_of = median_of(5, lambda: run_cli("products", "show", product,
                                                      "--as-of", as_of))
        verify = timed(lambda: run_cli("audit", "verify"))
        chain = timed(lambda: audit.verify(audit.StoredChain(ledger.backend, ledger.app.recorder),
                                           ledger.db))
        datasets, price, daily = measure_duckdb(ledger, product)
        sizes = measure_bytes(pg, schema, ledger.app.recorder.events_table_name)
        events = history.events
    finally:
        ledger.close()
        if not keep:
            _drop(pg, schema)
            shutil.rmtree(data, ignore_errors=True)
    return [
        ("events in the store", events, ""),
        ("record a 500-product result p50", p50 * 1000, "ms"),
        ("record a 500-product result p95", p95 * 1000, "ms"),
        ("append (record_many, 20 results a group)", history.rate, "ev/s"),
        ("catch-up of the read models from 0", events / caught, "ev/s"),
        ("catch-up read of the log (read ahead)", read, "ev/s"),
        ("rebuild of every read model", rebuilt, "ev/s"),
        ("jobs show (median of 5)", jobs_show * 1000, "ms"),
        ("products show --as-of (median of 5)", products_as_of * 1000, "ms"),
        ("audit verify (CLI: chain, snapshots, datasets)", verify * 1000, "ms"),
        ("  of which the hash chain (audit.verify)", chain * 1000, "ms"),
        ("DuckDB datasets catch-up from 0", datasets, "ev/s"),
        ("DuckDB price_history (one product)", price * 1000, "ms"),
        ("DuckDB daily average price per category", daily * 1000, "ms"),
        ("observations (Observed rows + sighted)", sizes["observed"] + sizes["sighted"], ""),
        ("  of which unchanged (in Sightings)", sizes["sighted"], ""),
        ("bytes per event (table + indexes)", sizes["per_event"], "B"),
        ("bytes per observation, every event included", sizes["per_observation"], "B"),
        ("bytes per unchanged observation", sizes["per_unchanged"], "B"),
        ("bytes per Observed row (table + indexes)", sizes["per_observed_row"], "B"),
        ("Observed state (pg_column_size)", sizes["observed_state"], "B"),
        ("Sightings state (pg_column_size, a crawl)", sizes["sightings_state"], "B"),
        ("snapshot table per event", sizes["snapshot_bytes"] / events, "B"),
    ]


def _progress(size: int) -> Callable[[int], None]:
    marks = iter(range(size // 10, size, size // 10 or 1))
    mark = [next(marks, size)]

    def show(events: int) -> None:
        if events >= mark[0]:
            print(f"  ... {events:,} events", flush=True)
            mark[0] = next(marks, size)
    return show


def _drop(pg: str, schema: str) -> None:
    with psycopg.connect(pg, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema}_read" CASCADE')


def report(sizes: list[int], results: list[list[Row]]) -> None:
    base = results[0]
    print(f"\n{'figure':<44}" + "".join(f"{s:>14,}" for s in sizes) + "   ratio to smallest")
    for index, (label, first, unit) in enumerate(base):
        values = [r[index][1] for r in results]
        ratios = ", ".join(f"{v / first:.2f}x" if first else "-" for v in values[1:])
        print(f"{label + (f' ({unit})' if unit else ''):<44}"
              + "".join(f"{v:>14,.1f}" for v in values) + f"   {ratios or '(one size)'}")
    last = {label: value for label, value, _ in results[-1]}
    per_observation = last["bytes per observation, every event included"]
    per_event = last["bytes per event (table + indexes)"]
    year = FLEET_OBSERVATIONS_A_DAY * 365 * per_observation
    snapshots = year / per_event * last["snapshot table per event"]
    print(f"\na year of the 1,000-store fleet ({FLEET_OBSERVATIONS_A_DAY:,} observations a "
          f"day): {year / 1e12:.3f} TB of events table with indexes at {per_observation:.0f} B "
          f"an observation (every event included; {per_event:.0f} B an event), "
          f"+{snapshots / 1e12:.3f} TB of snapshots")
    print(f"bytes per unchanged observation: {last['bytes per unchanged observation']:.0f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pg", default="postgresql://postgres@127.0.0.1:5432/test")
    parser.add_argument("--sizes", default="100000,1000000,10000000")
    parser.add_argument("--keep", action="store_true", help="keep each size's schema")
    parser.add_argument("--per-product", action="store_true",
                        help="record every observation as a Product.Observed (no Sightings), "
                             "as the ledger did before compact sightings")
    args = parser.parse_args()
    try:
        sizes = [int(s) for s in args.sizes.split(",")]
    except ValueError:
        raise SystemExit(f"bad --sizes {args.sizes!r}: use numbers, e.g. 100000,1000000") from None
    if not sizes or min(sizes) < 10_000:
        raise SystemExit("bad --sizes: each size is at least 10000 events")
    results = [measure_size(args.pg, size, args.keep, not args.per_product) for size in sizes]
    report(sizes, results)


if __name__ == "__main__":
    main()
