"""Growth benchmark: does the ledger stay fast as the event log grows? (not a test)

    .venv/bin/python bench/growth_bench.py [--sizes 100000,1000000,10000000] [--keep]
                                           [--schema NAME] [--skip audit,duckdb,read]
                                           [--pg postgresql://postgres@127.0.0.1:5432/test]

For each size, a fresh PostgreSQL schema gets a fleet's history of that many events
(`growth_fast.generate_history`: the domain's aggregates in memory, the application's
mapper, snapshots and recorder, big COPYs; `--recorded`: `growth_history.record_history`,
every result through `record_many`, ~5x the CPU; with `--schema`, a store recorded
earlier into that schema is measured as it is, its history resumed by
`growth_history.resume_history`), then, on that store:
- rebuild: every read model from position 0 (`projections.rebuild`), seconds and
  events/s; the whole notification log read ahead as the runner does (events/s), and
  its last 100,000 events (what a relay or projector that keeps up reads: the store's
  part of the relay's rate);
- checkpoint: `Ledger.checkpoint()` of the read models (seconds, Parquet bytes);
- then more rounds of crawls (`crawl_more`: size / 50 events, 5,000 to 100,000) and
  record: one 500-product catalog result through `record_success` (p50/p95 of 12);
- catch-up: those new events applied to the grown read models (events/s);
- rebuild from the latest checkpoint: restore it and replay the events after it;
- `jobs show`, `products show --as-of`, `audit verify`: the CLI's own entry point,
  in process (its bootstrap included; no interpreter start), median of 5 (verify: once,
  and its hash chain alone, `projections.audit.verify`, once);
- DuckDB: the Parquet datasets caught up from 0, then `price_history` of one product
  and a daily average price per category (median of 3 on one connection);
- bytes: `pg_total_relation_size` of the events table (heap, TOAST, indexes) per event,
  and the share an `Observed` row takes of it (its own row bytes' share of the table,
  plus the indexes per row): the bytes of one unchanged observation; snapshots apart.
`--skip` leaves out figures that are whole passes over the log (printed as nan).
Every figure is printed next to the same figure at the smallest size, with the ratio;
then a year of the 1,000-store fleet (3 million events a day) at the measured bytes.
The relay is not measured here: it needs a Kafka broker (`bench/relay_bench.py`).
The schema and the data directory (Parquet datasets) are removed afterwards unless
`--keep` (or `--schema`: that schema is kept).
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
from growth_fast import generate_history  # noqa: E402
from growth_history import (  # noqa: E402
    T0,
    FleetShape,
    History,
    crawl_more,
    record_history,
    resume_history,
)

from analytics import connect  # noqa: E402
from analytics.queries import price_history  # noqa: E402
from domain import ids  # noqa: E402
from domain.values import CrawlSuccess  # noqa: E402
from ledger import cli  # noqa: E402
from ledger.bootstrap import Ledger, bootstrap  # noqa: E402
from ledger.settings import Settings  # noqa: E402
from projections import audit, checkpoints  # noqa: E402
from projections.datasets import DatasetWriter  # noqa: E402
from projections.rebuild import rebuild, rebuild_from_checkpoint  # noqa: E402

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
        return float(heap * row_bytes / all_bytes + indexes * n / count)

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


def measure_read_ahead(ledger: Ledger) -> float:
    """Reading the whole log ahead, as the runner does (events/s)."""
    started = time.perf_counter()
    count = sum(len(batch) for batch in ledger.source.batches(0, 1000))
    return count / (time.perf_counter() - started)


def measure_tail_read(ledger: Ledger, count: int = 100_000) -> float:
    """Reading the log's last `count` events ahead (events/s): what a relay or a projector
    that keeps up reads, however long the log."""
    head = ledger.source.head()
    started = time.perf_counter()
    read = sum(len(batch) for batch in ledger.source.batches(max(head - count, 0), 1000))
    return read / (time.perf_counter() - started)


def checkpoint_bytes(ledger: Ledger) -> int:
    rows = ledger.db.query(f"SELECT sum(length(data)) AS n FROM {checkpoints.PARTS}")
    return int(rows[0]["n"] or 0)


def rebuild_from_latest(ledger: Ledger) -> tuple[float, int]:
    """A rebuild from the latest checkpoint (s) and the events it replayed."""
    refused: list[str] = []
    started = time.perf_counter()
    done = rebuild_from_checkpoint(ledger.source, ledger.db, ledger.projections,
                                   ledger.chain.link_at, refused.append)
    seconds = time.perf_counter() - started
    if done.checkpoint is None:
        raise SystemExit(f"no checkpoint was used: {refused}")
    return seconds, done.replayed


def measure_duckdb(ledger: Ledger, product: str) -> tuple[float, float, float]:
    """The datasets caught up from 0 (events/s), then the two queries' medians (s)."""
    writer = DatasetWriter(ledger.data_dir, ledger.source, ledger.tables.dataset_manifests)
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


def measure_size(pg: str, size: int, keep: bool, schema: str | None = None,
                 skip: frozenset[str] = frozenset(), compact: bool = True,
                 recorded: bool = False) -> list[Row]:
    """Every figure at one size. With `schema`, that schema's store is used (filled to
    `size` events first if it holds fewer: `--schema` resumes nothing, it records a
    history only into an empty one) and kept. `compact`: unchanged observations as
    compact sightings (the ledger's default) or one Product.Observed each; `recorded`:
    the history recorded through `record_many` rather than generated (always so
    without `compact`: the generator writes compact sightings)."""
    keep = keep or schema is not None
    schema = schema or f"growth_{uuid.uuid4().hex[:8]}"
    data = Path(tempfile.mkdtemp(prefix="crawl-ledger-growth-"))
    store = f"{pg}?schema={schema}"
    settings = Settings(data_dir=data, store=store, checkpoint_every=0)
    ledger = bootstrap(settings)
    ledger.app.options = replace(ledger.app.options, compact_sightings=compact)
    shape = fleet_for(size)
    nan = float("nan")
    try:
        print(f"\n{size:,} events: {shape.stores} stores x {shape.products} products, "
              f"{shape.crawls_per_day} crawls a day; schema {schema}", flush=True)
        if (ledger.app.recorder.max_notification_id() or 0) == 0:
            record = record_history if recorded or not compact else generate_history
            history = record(ledger, size, shape, progress=_progress(size))
            append = history.rate
        else:
            history, append = resume_history(ledger, shape), nan
        events = history.events
        analyze(pg, schema)
        print(f"  {events:,} events ({history.crawls:,} crawls recorded now, "
              f"{history.seconds:.0f} s)", flush=True)
        full = timed(lambda: rebuild(ledger.source, ledger.db, ledger.projections))
        print(f"  rebuild from 0: {full:.0f} s", flush=True)
        read = measure_read_ahead(ledger) if "read" not in skip else nan
        tail = measure_tail_read(ledger)
        write = timed(ledger.checkpoint)
        stored = checkpoint_bytes(ledger)
        print(f"  checkpoint: {write:.1f} s, {stored / 1e6:.1f} MB", flush=True)
        crawl_more(ledger, history, max(5_000, min(size // 50, 100_000)))
        p50, p95 = measure_record(ledger, history)
        after = (ledger.app.recorder.max_notification_id() or 0) - ledger.projection_position()
        caught = timed(ledger.catch_up)
        from_checkpoint, replayed = rebuild_from_latest(ledger)
        print(f"  rebuild from the checkpoint: {from_checkpoint:.1f} s ({replayed:,} events "
              "after it)", flush=True)
        product = str(ids.product_id(history.stores[1], "p7"))
        os.environ.update(LEDGER_STORE=store, LEDGER_DATA_DIR=str(data),
                          LEDGER_CHECKPOINT_EVERY="0")
        as_of = (T0 + (history.last - T0) / 2).isoformat()
        jobs_show = median_of(5, lambda: run_cli("jobs", "show", history.jobs[1]))
        products_as_of = median_of(5, lambda: run_cli("products", "show", product,
                                                      "--as-of", as_of))
        verify, chain = nan, nan
        if "audit" not in skip:
            verify = timed(lambda: run_cli("audit", "verify"))
            chain = timed(lambda: audit.verify(ledger.chain, ledger.db))
        datasets, price, daily = (nan, nan, nan) if "duckdb" in skip else measure_duckdb(
            ledger, product)
        sizes = measure_bytes(pg, schema, ledger.app.recorder.events_table_name)
        events = int(sizes["events"])
    finally:
        ledger.close()
        if not keep:
            _drop(pg, schema)
        shutil.rmtree(data, ignore_errors=True)
    return [
        ("events in the store", events, ""),
        ("record a 500-product result p50", p50 * 1000, "ms"),
        ("record a 500-product result p95", p95 * 1000, "ms"),
        ("history written (generated, or recorded: --recorded)", append, "ev/s"),
        ("catch-up of new results on the grown models", after / caught, "ev/s"),
        ("catch-up read of the log (read ahead)", read, "ev/s"),
        ("read of the log's last 100k events (relay, tail)", tail, "ev/s"),
        ("rebuild of every read model from 0", full, "s"),
        ("  the same, as a rate", history.events / full, "ev/s"),
        ("checkpoint of the read models (write)", write, "s"),
        ("checkpoint size (Parquet, zstd)", stored / 1e6, "MB"),
        ("rebuild from the latest checkpoint", from_checkpoint, "s"),
        ("  events replayed after the checkpoint", replayed, ""),
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


def analyze(pg: str, schema: str) -> None:
    """ANALYZE the store's tables, as autovacuum would after a bulk load. Without it (a
    server with autovacuum off, as this one) the events table has no statistics, and a
    product load (`select_after`: a join with an array of ids) is planned as a merge
    join over the whole primary key with ~1.5 s of JIT compilation a query: recording
    fell from ~1,500 to ~60 events/s at 1.1 million events."""
    with psycopg.connect(pg, autocommit=True) as conn:
        tables = conn.execute("SELECT table_name FROM information_schema.tables WHERE "
                              "table_schema = %s", (schema,)).fetchall()
        for (table,) in tables:
            conn.execute(f'ANALYZE "{schema}"."{table}"')


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
    parser.add_argument("--recorded", action="store_true",
                        help="record the history through record_many (the recording path, "
                             "~5x the CPU) instead of generating it (growth_fast)")
    parser.add_argument("--schema", help="one size only: measure the store in this schema "
                        "(recording its history first if it is empty) and keep it")
    parser.add_argument("--skip", default="", help="figures to leave out (NaN), comma-separated:"
                        " audit, duckdb, read (each a whole pass over the log)")
    args = parser.parse_args()
    try:
        sizes = [int(s) for s in args.sizes.split(",")]
    except ValueError:
        raise SystemExit(f"bad --sizes {args.sizes!r}: use numbers, e.g. 100000,1000000") from None
    if not sizes or min(sizes) < 10_000:
        raise SystemExit("bad --sizes: each size is at least 10000 events")
    skip = frozenset(s for s in args.skip.split(",") if s)
    if skip - {"audit", "duckdb", "read"}:
        raise SystemExit(f"bad --skip {args.skip!r}: use audit, duckdb, read")
    if args.schema and len(sizes) != 1:
        raise SystemExit("--schema measures one size: give one --sizes")
    results = [measure_size(args.pg, size, args.keep, args.schema, skip, not args.per_product,
                            args.recorded) for size in sizes]
    report(sizes, results)


if __name__ == "__main__":
    main()
