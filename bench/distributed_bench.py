"""Crawl result -> read model, distributed (budget p99 < 500 ms).

Starts Tansu and, as separate processes (`ledger.drivers.distributed.Cluster`), the
relay and one projecting Faust worker (`crawl-ledger worker --role project`)
over a fresh PostgreSQL schema. Then, one after another, it records a crawl
result of N products (one atomic save: the job's outcome plus every product
event) and measures the time from the commit until the read models hold it:
the relay published it (LISTEN/NOTIFY wake-up) and the projector applied every
message up to the relay's acknowledged offsets (`ledger.drivers.distributed.lag`).
The read models are checked against a rebuild at the end.

    .venv/bin/python bench/distributed_bench.py [--results 200] [--products 50]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from relay_bench import new_job, record, start_tansu, tear_down  # noqa: E402

from ledger.bootstrap import Ledger, bootstrap  # noqa: E402
from ledger.drivers.distributed import Cluster, lag, wait_caught_up  # noqa: E402
from ledger.settings import Settings  # noqa: E402
from projections.framework import table_rows  # noqa: E402
from projections.runner import ProjectionRunner  # noqa: E402
from streams.topics import ensure_topics  # noqa: E402


def caught_up(ledger: Ledger, group: str, poll: float,
              timeout: float = 30.0) -> tuple[float, float]:
    """Seconds until the relay has published the result, and until the projector applied it."""
    started = time.perf_counter()
    published = None
    while (current := lag(ledger, group)) != {"relay": 0, "projectors": 0}:
        if published is None and current["relay"] == 0:
            published = time.perf_counter() - started
        if time.perf_counter() - started > timeout:
            raise TimeoutError(f"not caught up after {timeout}s: {current}")
        time.sleep(poll)
    done = time.perf_counter() - started
    return (done if published is None else published), done


def equals_rebuild(ledger: Ledger) -> bool:
    """The projector's tables equal a rebuild from the event store into scratch tables."""
    scratch = ledger.projections("scratch_")
    for projection in scratch:
        projection.drop(ledger.db)
    ProjectionRunner(ledger.source, ledger.db, scratch).catch_up()
    return all(table_rows(ledger.db, table, "") == table_rows(ledger.db, table, "scratch_")
               for projection in scratch for table in projection.tables)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pg", default="postgresql://postgres@127.0.0.1:5432/test")
    parser.add_argument("--results", type=int, default=200, help="crawl results to record")
    parser.add_argument("--products", type=int, default=50, help="products per result")
    parser.add_argument("--poll", type=float, default=0.005, help="read-model poll (s)")
    args = parser.parse_args()
    broker, server = start_tansu()
    schema = f"bench_dist_{int(time.time())}"
    data_dir = Path(tempfile.mkdtemp(prefix="crawl-ledger-dist-bench-"))
    settings = Settings.from_env({"LEDGER_ALLOW_NETWORKS": "127.0.0.0/8", "LEDGER_STORE": f"{args.pg}?schema={schema}",
                                  "LEDGER_BROKER": f"kafka://{server}",
                                  "LEDGER_DATA_DIR": str(data_dir)})
    ledger = bootstrap(settings)
    try:
        ensure_topics(settings.broker_servers, 4)
        job = new_job(ledger.app)
        with Cluster(settings, workers=[("project",)], worker_args=["--partitions", "4"]) as cluster:
            group = cluster.projector_group
            record(ledger.app, job, 0, args.products)
            wait_caught_up(ledger, group, 120)  # startup and the group join are not latency
            relayed, latencies = [], []
            for cycle in range(1, args.results + 1):
                record(ledger.app, job, cycle, args.products)
                published, applied = caught_up(ledger, group, args.poll)
                relayed.append(published)
                latencies.append(applied)
        events = ledger.source.head()
        equal = equals_rebuild(ledger)
        latencies.sort()
        relayed.sort()
        p99 = latencies[max(0, int(len(latencies) * 0.99) - 1)]
        print(f"Crawl result -> read model, distributed (relay + 1 Faust projector, Tansu, "
              f"PostgreSQL): {args.results} results of {args.products} products, {events} events")
        print(f"  p50 {statistics.median(latencies) * 1000:.0f} ms, p99 {p99 * 1000:.0f} ms, "
              f"max {latencies[-1] * 1000:.0f} ms (budget p99 < 500 ms); "
              f"read models equal a rebuild: {equal}")
        print(f"  of which commit -> published by the relay: "
              f"p50 {statistics.median(relayed) * 1000:.0f} ms, max {relayed[-1] * 1000:.0f} ms")
    finally:
        tear_down(ledger, args.pg, schema, broker)


if __name__ == "__main__":
    main()
