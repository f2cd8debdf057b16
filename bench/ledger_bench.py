"""Ledger benchmarks against their peers, side by side in one run (not a test).

    .venv/bin/python bench/ledger_bench.py [--pg postgresql://postgres@127.0.0.1:5432/test]

1. append: a catalog result's events recorded through the ledger (and, printed
   beside it, the event store's part of that: encoding, inserting and committing
   the events and snapshots) vs a raw
   `executemany` of the same rows: the very rows each recording stored (id,
   version, topic, state bytes), one transaction per recording as the ledger
   wrote them, into a table of the same definition (primary key; the
   notification id and its index on PostgreSQL) with the ledger's durability
   (sqlite3 in WAL with the ledger connection's `synchronous`); also printed,
   not the budget's peer: synthetic 201-byte rows, 1,000 per transaction, WAL
   and synchronous=NORMAL on SQLite;
2. record: one 500-product catalog result recorded atomically (p50/p95);
3. catch-up: reading the whole notification log as envelopes, 1,000 per batch
   (events/s): one `read` after the other (the budget line, as measured before),
   and through `batches` as the projection runner reads (a worker thread fetches
   the next batch while the current one decodes);
4. rebuild: all read models from position 0 (events/s).
The append runs five rounds (`--rounds`), each a fresh ledger then its peer on that
round's rows (a fresh table): the ratio is the median of the rounds' ratios, every round
is printed (the raw peer, bound by fsync, moves more between minutes than the ledger).
Catch-up and rebuild run three rounds each (alternating for the reads) on the last
round's ledger; the median is the number, every round is printed.
PostgreSQL runs in a throwaway schema, SQLite (embedded) in a fresh directory.
"""

from __future__ import annotations

import argparse
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import psycopg  # noqa: E402

from domain.values import CrawlSuccess, Observation, Offer  # noqa: E402
from ledger.bootstrap import Ledger, bootstrap  # noqa: E402
from ledger.settings import Settings  # noqa: E402
from projections.rebuild import rebuild  # noqa: E402

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def observations(n: int, cycle: int) -> tuple[Observation, ...]:
    return tuple(
        Observation(provider_product_id=f"p{i}", name=f"Product {i}", brand="Brand",
                    offers=(Offer("1g", Decimal(10 + (i + cycle) % 7), "USD"),
                            Offer("1/8oz", Decimal(35 + (i * cycle) % 5), "USD")),
                    availability="in_stock")
        for i in range(n) if (i + cycle) % 23 != 0  # a few products vanish each cycle
    )


Row = tuple[Any, int, str, bytes]
PAYLOAD = b'{"offers":[{"option":"1g","price":"10"}],"availability":"in_stock"}' * 3


def new_ledger(pg: str, tmp: Path) -> tuple[Ledger, str]:
    schema = f"bench_{uuid.uuid4().hex[:8]}"
    settings = Settings(data_dir=tmp, store=f"{pg}?schema={schema}")
    return bootstrap(settings), schema


def new_sqlite_ledger(tmp: Path) -> Ledger:
    return bootstrap(Settings(data_dir=tmp, store=f"sqlite:///{tmp / 'ledger.sqlite'}"))


def synthetic(rows: int) -> list[list[Row]]:
    """201-byte rows of the events' shape, 1,000 per transaction."""
    return [[(uuid.uuid4(), 1, "domain.product:Product.Observed", PAYLOAD)
             for _ in range(start, min(start + 1000, rows))] for start in range(0, rows, 1000)]


def drop(pg: str, schema: str) -> None:
    with psycopg.connect(pg.replace("postgresql://", "postgresql://"), autocommit=True) as conn:
        conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
        conn.execute(f"DROP SCHEMA IF EXISTS {schema}_read CASCADE")


def bench_record(ledger: Ledger, products: int, cycles: int
                 ) -> tuple[list[float], list[float], int, list[tuple[int, int]]]:
    """Per recording its time and the part of it in the event store's append (the
    application's `_append`: encoding the events, inserting them and the snapshots,
    committing); the events stored; the notification ids each recording's transaction
    took (first, last)."""
    app = ledger.app
    store = app.register_store(name="Bench", base_url=f"http://bench-{uuid.uuid4().hex[:6]}.test",
                               platform="shopify", now=T0)
    job = app.schedule_job(kind="catalog", url=f"http://bench-{store}.test/products.json",
                           store_id=store, every=3600, now=T0)
    times: list[float] = []
    appending: list[float] = []
    spans: list[tuple[int, int]] = []
    record, spent = app._append, [0.0]  # the event store's append: encode, insert, commit

    def timed_record(processing_event: Any) -> Any:
        started = time.perf_counter()
        try:
            return record(processing_event)
        finally:
            spent[0] += time.perf_counter() - started

    app._append = timed_record  # type: ignore[method-assign]
    for cycle in range(cycles):
        now = T0 + timedelta(hours=cycle)
        task = app.lease(job, "bench", 300, now)
        outcome = CrawlSuccess(200, task.url, "shopify", "shopify/1", f"h{cycle}",
                               observations=observations(products, cycle))
        before = app.recorder.max_notification_id() or 0
        spent[0] = 0.0
        started = time.perf_counter()
        app.record_success(job, task.lease_id, outcome, now)
        times.append(time.perf_counter() - started)
        appending.append(spent[0])
        spans.append((before + 1, app.recorder.max_notification_id() or 0))
    del app._append
    return times, appending, app.recorder.max_notification_id() or 0, spans


def recorded_rows(ledger: Ledger, spans: list[tuple[int, int]]) -> list[list[Row]]:
    """The rows each recording stored, as the ledger stored them, per transaction."""
    batches = []
    for first, last in spans:
        rows = ledger.app.recorder.select_notifications(first, last - first + 1, stop=last)
        batches.append([(n.originator_id, n.originator_version, n.topic, n.state) for n in rows])
    return batches


def pg_executemany(pg: str, batches: list[list[Row]], notification_index: bool = True) -> float:
    """The rows into a table defined as the library's (primary key, notification id and,
    unless told not, its unique index), a transaction per batch: rows/s."""
    schema = f"bench_raw_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(pg, autocommit=False) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
        conn.execute(f"CREATE TABLE {schema}.t (originator_id uuid NOT NULL, "
                     "originator_version bigint NOT NULL, topic text, state bytea, "
                     "notification_id bigserial, PRIMARY KEY (originator_id, originator_version))")
        if notification_index:
            conn.execute(f"CREATE UNIQUE INDEX ON {schema}.t (notification_id ASC)")
        conn.commit()
        started = time.perf_counter()
        for rows in batches:
            with conn.cursor() as cur:
                cur.executemany(f"INSERT INTO {schema}.t (originator_id, originator_version, "
                                "topic, state) VALUES (%s, %s, %s, %s)", rows)
            conn.commit()
        elapsed = time.perf_counter() - started
        conn.execute(f"DROP SCHEMA {schema} CASCADE")
        conn.commit()
    return sum(map(len, batches)) / elapsed


def sqlite_executemany(path: Path, ddl: str, synchronous: int, batches: list[list[Row]]) -> float:
    """The rows into a fresh file's `stored_events` (created by `ddl`), WAL and the given
    `synchronous`, a transaction per batch: rows/s."""
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute(f"PRAGMA synchronous={int(synchronous)}")
    conn.execute(ddl)
    plain = [[(str(i), v, t, s) for i, v, t, s in rows] for rows in batches]
    started = time.perf_counter()
    for rows in plain:
        conn.execute("BEGIN")
        conn.executemany("INSERT INTO stored_events (originator_id, originator_version, topic, "
                         "state) VALUES (?, ?, ?, ?)", rows)
        conn.execute("COMMIT")
    elapsed = time.perf_counter() - started
    conn.close()
    return sum(map(len, batches)) / elapsed


def same_rows_sqlite(ledger: Ledger, tmp: Path, batches: list[list[Row]]) -> float:
    """The same rows into a copy of the ledger's table definition with the ledger
    connection's `synchronous`, in a fresh file beside it: rows/s."""
    with ledger.app.recorder.datastore.transaction(commit=False) as cursor:
        cursor.execute("SELECT sql FROM sqlite_master WHERE name = 'stored_events'")
        ddl = cursor.fetchone()[0]
        cursor.execute("PRAGMA synchronous")
        synchronous = cursor.fetchone()[0]
    return sqlite_executemany(Path(tempfile.mkdtemp(dir=tmp)) / "same.sqlite", ddl,
                              synchronous, batches)


SYNTHETIC_DDL = ("CREATE TABLE stored_events (originator_id TEXT, originator_version INTEGER, "
                 "topic TEXT, state BLOB, PRIMARY KEY (originator_id, originator_version))")


def measure(new: Callable[[], tuple[Ledger, Callable[[], None]]], products: int,
            cycles: int, raw: Callable[[], float],
            same: Callable[[Ledger, list[list[Row]]], float], rounds: int = 5) -> dict[str, Any]:
    """`rounds` appends, each into a fresh ledger from `new` (with its clean-up) and then
    its rows by the peer `same`; the reads and the rebuild on the last round's ledger."""
    appends: list[dict[str, Any]] = []
    cleanups: list[Callable[[], None]] = []
    try:
        for _ in range(rounds):
            ledger, cleanup = new()
            cleanups.append(cleanup)
            times, appending, events, spans = bench_record(ledger, products, cycles)
            steady = sorted(times[1:])
            batches = recorded_rows(ledger, spans)
            rows = sum(map(len, batches))
            rate, peer = rows / sum(times), same(ledger, batches)
            appends.append({"events": events, "first": times[0], "p50": statistics.median(steady),
                            "p95": steady[int(len(steady) * 0.95) - 1], "rate": rate,
                            "store_rate": rows / sum(appending), "same": peer,
                            "ratio": rate / peer, "store_ratio": rows / sum(appending) / peer})
            if len(appends) < rounds:
                cleanups.pop()()
        result = _median_round(appends)
        result["raw"] = raw()
        result.update(_reads(ledger, events))
        return result
    finally:
        for cleanup in cleanups:
            cleanup()


def _median_round(appends: list[dict[str, Any]]) -> dict[str, Any]:
    """The round whose ratio is the median (its own figures with it), and every round's."""
    middle = sorted(appends, key=lambda a: a["ratio"])[len(appends) // 2]
    return {**middle, "ratio_all": ", ".join(f"{a['ratio']:.0%}" for a in appends),
            "store_ratio": statistics.median(a["store_ratio"] for a in appends),
            "store_ratio_all": ", ".join(f"{a['store_ratio']:.0%}" for a in appends)}


def _reads(ledger: Ledger, events: int) -> dict[str, Any]:
    result: dict[str, Any] = {}
    # three rounds each, alternating (the first read also pays PostgreSQL's hint bits
    # for the rows just inserted); the median of each is reported, with every round
    reads: dict[str, list[float]] = {"read": [], "read_ahead": []}
    for _ in range(3):
        started = time.perf_counter()
        count = sum(len(ledger.source.read(p, 1000)) for p in range(0, events, 1000))
        reads["read"].append(count / (time.perf_counter() - started))
        started = time.perf_counter()
        count = sum(len(batch) for batch in ledger.source.batches(0, 1000))
        reads["read_ahead"].append(count / (time.perf_counter() - started))
        assert count == events
    rebuilds = []
    for _ in range(3):
        started = time.perf_counter()
        rebuilt = rebuild(ledger.source, ledger.db, ledger.projections)
        rebuilds.append(rebuilt / (time.perf_counter() - started))
    for name, rates in (*reads.items(), ("rebuild", rebuilds)):
        result[name] = statistics.median(rates)
        result[name + "_all"] = ", ".join(f"{rate / 1000:.1f}k" for rate in rates)
    return result


def report(name: str, peer: str, budget: str, r: dict[str, Any], products: int,
           cycles: int) -> None:
    print(f"{name}, {products}-product catalog results, {cycles} cycles, {r['events']} events "
          "a round")
    print(f"  record one result: first {r['first'] * 1000:.0f} ms (creates products), "
          f"then p50 {r['p50'] * 1000:.0f} ms, p95 {r['p95'] * 1000:.0f} ms "
          "(budget p95 < 250 ms on PostgreSQL)")
    print(f"  append rate through the ledger: {r['ratio']:.0%} of {peer} of the same rows "
          f"(budget >= {budget}; median of rounds {r['ratio_all']}); that round "
          f"{r['rate']:,.0f} events/s vs {r['same']:,.0f} rows/s; synthetic 201-byte rows: "
          f"{r['raw']:,.0f} rows/s ({r['rate'] / r['raw']:.0%})")
    print(f"    of which the event store's append (encode, insert, commit): "
          f"{r['store_ratio']:.0%} of the same rows (rounds {r['store_ratio_all']}; that round "
          f"{r['store_rate']:,.0f} events/s); the rest is the domain's work (loading, "
          "commands, building the events)")
    print(f"  catch-up read of the notification log: {r['read']:,.0f} events/s "
          f"(budget >= 100k/s; rounds {r['read_all']}); reading ahead (batches): "
          f"{r['read_ahead']:,.0f} events/s ({r['read_ahead_all']})")
    print(f"  rebuild of all read models: {r['rebuild']:,.0f} events/s (budget >= 30k/s; "
          f"rounds {r['rebuild_all']})")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pg", default="postgresql://postgres@127.0.0.1:5432/test")
    parser.add_argument("--products", type=int, default=500)
    parser.add_argument("--cycles", type=int, default=20)
    parser.add_argument("--no-sqlite", action="store_true", help="PostgreSQL only")
    parser.add_argument("--rounds", type=int, default=5, help="appends, each with its peer")
    args = parser.parse_args()
    tmp = Path("/tmp/crawl-ledger-bench")

    def pg_ledger() -> tuple[Ledger, Callable[[], None]]:
        ledger, schema = new_ledger(args.pg, tmp)

        def cleanup() -> None:
            ledger.close()
            drop(args.pg, schema)
        return ledger, cleanup

    pg = measure(pg_ledger, args.products, args.cycles,
                 lambda: pg_executemany(args.pg, synthetic(20_000), notification_index=False),
                 lambda _ledger, batches: pg_executemany(args.pg, batches), args.rounds)
    report("PostgreSQL", "raw psycopg executemany", "50%", pg, args.products, args.cycles)
    if args.no_sqlite:
        return
    lite_dir = Path(tempfile.mkdtemp(prefix="crawl-ledger-bench-"))

    def sqlite_ledger() -> tuple[Ledger, Callable[[], None]]:
        directory = Path(tempfile.mkdtemp(dir=lite_dir))
        ledger = new_sqlite_ledger(directory)

        def cleanup() -> None:
            ledger.close()
            shutil.rmtree(directory, ignore_errors=True)
        return ledger, cleanup

    try:
        lite = measure(sqlite_ledger, args.products, args.cycles,
                       lambda: sqlite_executemany(lite_dir / "raw.sqlite", SYNTHETIC_DDL, 1,
                                                  synthetic(20_000)),
                       lambda ledger, batches: same_rows_sqlite(
                           ledger, Path(ledger.data_dir), batches), args.rounds)
    finally:
        shutil.rmtree(lite_dir, ignore_errors=True)
    report("SQLite (embedded)", "raw sqlite3 executemany", "30%", lite, args.products, args.cycles)


if __name__ == "__main__":
    main()
