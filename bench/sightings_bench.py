"""CPU to record a 500-product catalog crawl: compact sightings against every observation
per product (a benchmark, not a test).

    .venv/bin/python bench/sightings_bench.py [--crawls 40] [--rounds 2]

One store of the growth fleet (`growth_history.StoreCatalog`: 1 % price changes a
crawl, a few products leaving and coming back, stock moves) crawled `--crawls` times
into a fresh SQLite ledger, each result through `record_success`; the median process
CPU time of a recording (the first, all discoveries, left out), alternating the two
ways `--rounds` times, and the events each way stored.
"""

from __future__ import annotations

import argparse
import random
import shutil
import statistics
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from growth_history import T0, FleetShape, StoreCatalog, store_url  # noqa: E402

from domain.values import CrawlSuccess  # noqa: E402
from ledger.bootstrap import bootstrap  # noqa: E402
from ledger.settings import Settings  # noqa: E402


def record_crawls(compact: bool, crawls: int) -> tuple[float, int]:
    """(median CPU ms a recording, events stored)."""
    data = Path(tempfile.mkdtemp(prefix="sightings-bench-"))
    ledger = bootstrap(Settings(data_dir=data, store=f"sqlite:///{data / 'ledger.sqlite'}"))
    try:
        app, shape = ledger.app, FleetShape(stores=1)
        app.options = replace(app.options, compact_sightings=compact)
        store = app.register_store(name="Shop", base_url=store_url(0), platform="shopify", now=T0)
        job = app.schedule_job(kind="catalog", url=f"{store_url(0)}/products.json", now=T0,
                               store_id=store, every=int(shape.interval.total_seconds()),
                               adaptive=False)
        catalog = StoreCatalog(0, shape, random.Random(1))
        cpu = []
        for n in range(crawls):
            now = T0 + n * shape.interval
            lease = app.lease(job, "bench", 600, now).lease_id
            outcome = CrawlSuccess(200, f"{store_url(0)}/products.json", "shopify", "shopify/1",
                                   f"c{n}", observations=catalog.crawl())
            started = time.process_time()
            app.record_success(job, lease, outcome, now)
            cpu.append(time.process_time() - started)
        return statistics.median(cpu[1:]) * 1000, app.recorder.max_notification_id() or 0
    finally:
        ledger.close()
        shutil.rmtree(data, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--crawls", type=int, default=40)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    results: dict[bool, list[float]] = {False: [], True: []}
    events: dict[bool, int] = {}
    for _ in range(args.rounds):
        for compact in (False, True):
            ms, events[compact] = record_crawls(compact, args.crawls)
            results[compact].append(ms)
    for compact, label in ((False, "per product"), (True, "compact sightings")):
        print(f"{label:<18} record CPU a 500-product crawl: median {statistics.median(results[compact]):.1f} ms"
              f" ({', '.join(f'{m:.1f}' for m in results[compact])}); {events[compact]:,} events"
              f" in {args.crawls} crawls")
    ratio = statistics.median(results[True]) / statistics.median(results[False])
    print(f"compact / per product: {ratio:.2f}x")


if __name__ == "__main__":
    main()
