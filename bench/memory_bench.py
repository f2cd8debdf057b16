"""Worker memory at 100 concurrent fetches: crawl-ledger's crawler against Scrapy on the
same local server, each in its own process, in the same run (issue budget: ours ≤
Scrapy's peak RSS).

(a) the crawler: `Crawler.crawl` over every page with 100 crawls in flight (4 hosts ×
25), fetch + raw archive + extraction, as `bench/crawl_bench.py` (a) runs it;
(b) the embedded runner (`crawl-ledger run`: the SQLite ledger recording every result and
the read models, the crawler in its child process) with concurrency 100, as the crawl
bench's (b): the sum of the two processes' peaks; and (b1) the same with the crawler
in the runner's own process (`--no-crawl-process`), one process;
(c) Scrapy: `bench/scrapy_peer.py` with CONCURRENT_REQUESTS=100, 25 per domain, JSON-LD
parsed in the callback (its own virtualenv, as in the crawl bench);
(d) once, after the runs (it takes minutes): the distributed deployment's crawl worker,
`crawl-ledger worker --role crawl --concurrency 100` (Faust, the crawler and the
PostgreSQL ledger in one process), beside a dispatching and projecting worker and the
relay, over Tansu and a fresh PostgreSQL schema (`--no-distributed` skips it); its peak
is the kernel's `VmHWM`, read while it still runs.
Peak RSS is the process's `ru_maxrss`, read by itself (`RUSAGE_SELF`; Scrapy's from
`wait4`): the high-water mark, whatever it was doing then; the crawl child's is its
parent's `RUSAGE_CHILDREN` after it exited.
The budget is the worker's, (a): the process that fetches.

The pages are the crawl bench's generated product pages (~17 KB, JSON-LD with ISO
codes) except one in `--real-every` (default 10): a real shop page of tests/corpus
(median ~360 KB, up to 3 MB; visible prices, currency symbols, microdata), so the
peaks include what real input costs. Scrapy's callback parses JSON-LD only.

    .venv/bin/python bench/memory_bench.py [--pages 3000] [--runs 3] [--real-every 10]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import crawl_bench  # noqa: E402
from crawl_bench import (  # noqa: E402
    _crawl_all,
    bench_embedded,
    ensure_scrapy,
    remove_scratch,
    schedule_pages,
    scratch_dir,
)
from crawl_server import Server, urls_by_host  # noqa: E402
from uvloop import run as run_loop  # noqa: E402  (the loop crawl_bench measures on)

HOSTS, PER_HOST = 4, 25


class _Served:
    """The bench server's addresses, as `bench_embedded` reads them (in a child process)."""

    def __init__(self, bases: list[str], pages: int) -> None:
        self.bases, self.pages = bases, pages

    def urls_by_host(self) -> list[list[str]]:
        return urls_by_host(self.bases, self.pages)


def child(kind: str, spec_file: str) -> None:
    """In the measured process: crawl every page with HOSTS × PER_HOST in flight."""
    from ledger.host.memory import keep_freed_memory_small

    keep_freed_memory_small()  # as `crawl-ledger` and its crawl process do
    spec = json.loads(Path(spec_file).read_text())
    served = _Served(spec["bases"], spec["pages"])
    try:
        if kind == "crawler":
            urls = [u for group in served.urls_by_host() for u in group]
            _, results = run_loop(_crawl_all(urls, scratch_dir("memory-bench-"), PER_HOST,
                                             HOSTS * PER_HOST))
            pages = results["ok"]
        else:
            crawl_bench.IN_CHILD = kind == "embedded"
            pages = bench_embedded(served, PER_HOST)["pages"]  # type: ignore[arg-type]
    finally:
        remove_scratch()
    # the crawl process (reaped by now): the largest peak among this process's children
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    # its own peak, read here: the peak `wait4` reports for it is the larger of its own
    # and its reaped children's (Linux), so the crawl process's when that was larger
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"items": pages, "children_rss_kib": children, "own_rss_kib": own}))


def distributed(served: _Served, pg: str) -> dict[str, Any]:
    """(d): the distributed deployment's crawl worker, `crawl-ledger worker --role crawl
    --concurrency 100` (Faust, the crawler, the PostgreSQL ledger), crawling every page
    beside a worker with the dispatch and project roles and the relay, over Tansu and a
    fresh PostgreSQL schema; its peak RSS (`VmHWM`) read before it is stopped."""
    from relay_bench import start_tansu, tear_down

    from ledger.bootstrap import bootstrap
    from ledger.drivers.distributed import Cluster, run_until_idle
    from ledger.settings import Settings
    from runtime.clock import SystemClock

    broker, address = start_tansu()
    schema = f"bench_mem_{os.getpid()}_{int(time.time())}"
    data_dir = scratch_dir("memory-bench-distributed-")
    settings = Settings.from_env({"LEDGER_ALLOW_NETWORKS": "127.0.0.0/8",
                                  "LEDGER_STORE": f"{pg}?schema={schema}",
                                  "LEDGER_BROKER": f"kafka://{address}",
                                  "LEDGER_DATA_DIR": str(data_dir)})
    ledger = bootstrap(settings)
    clock = SystemClock()
    try:
        schedule_pages(ledger, served, PER_HOST, clock.now())
        with Cluster(settings, workers=[("dispatch", "project"), ("crawl",)],
                     worker_args=["--partitions", "4", "--concurrency",
                                  str(HOSTS * PER_HOST)]) as cluster:
            started = time.perf_counter()
            run_until_idle(ledger, cluster.projector_group, clock, scheduler=False,
                           timeout=600)
            process = cluster.processes["worker-1"].process
            assert process is not None and process.poll() is None, "the crawl worker exited"
            status = Path(f"/proc/{process.pid}/status").read_text()
            peak_kib = int(status.split("VmHWM:")[1].split()[0])
            took = time.perf_counter() - started
        pages = ledger.read.job_counts().get("completed", 0)
    finally:
        tear_down(ledger, pg, schema, broker)
    return {"pages": pages, "rss_mib": peak_kib / 1024,
            "parts": f"(workers' start to idle: {took:.0f} s)"}


def measured(command: list[str]) -> dict[str, Any]:
    """Run `command`; its last stdout line (JSON) and its peak RSS in MiB."""
    with tempfile.TemporaryFile("w+") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.DEVNULL)
        _, status, usage = os.wait4(process.pid, 0)
        process.returncode = os.waitstatus_to_exitcode(status)
        if process.returncode != 0:
            raise RuntimeError(f"{command[1]} exited with {process.returncode}")
        out.seek(0)
        result = json.loads(out.read().strip().splitlines()[-1])
    children = result.get("children_rss_kib", 0)
    own = result.get("own_rss_kib", usage.ru_maxrss)  # Scrapy's: what wait4 reports
    return {"pages": result["items"], "rss_mib": (own + children) / 1024,
            "parts": f"{own / 1024:.1f} + {children / 1024:.1f} MiB" if children else ""}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pages", type=int, default=3000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--pg", default="postgresql://postgres@127.0.0.1:5432/test",
                        help="PostgreSQL for (d), the distributed crawl worker")
    parser.add_argument("--no-distributed", action="store_true", help="skip (d)")
    parser.add_argument("--real-every", type=int, default=10,
                        help="one page in N is a real corpus page (0: generated pages only)")
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(*args.child)
        return
    scrapy = ensure_scrapy()
    rows: dict[str, list[dict[str, Any]]] = {"crawler": [], "embedded": [],
                                             "embedded-in-process": [], "scrapy": []}
    with Server(HOSTS, args.pages, args.real_every) as server, \
            tempfile.NamedTemporaryFile("w", suffix=".txt") as urls, \
            tempfile.NamedTemporaryFile("w", suffix=".json") as spec:
        urls.write("\n".join(server.urls()))
        urls.flush()
        spec.write(json.dumps({"bases": server.bases, "pages": server.pages}))
        spec.flush()
        commands = {kind: [sys.executable, __file__, "--child", kind, spec.name]
                    for kind in ("crawler", "embedded", "embedded-in-process")}
        if scrapy:
            commands["scrapy"] = [scrapy, str(ROOT / "bench" / "scrapy_peer.py"), urls.name,
                                  "--concurrency", str(HOSTS * PER_HOST),
                                  "--per-host", str(PER_HOST)]
        real = f"one in {args.real_every} a real corpus page" if args.real_every else "all generated"
        print(f"{args.pages} pages on {HOSTS} hosts ({real}), {HOSTS * PER_HOST} fetches in flight")
        for run in range(args.runs):
            for name in list(commands)[run % len(commands):] + list(commands)[:run % len(commands)]:
                rows[name].append(measured(commands[name]))
                print(f"  run {run + 1} {name:19} {rows[name][-1]['pages']:6} pages, "
                      f"peak RSS {rows[name][-1]['rss_mib']:6.1f} MiB "
                      f"{rows[name][-1]['parts']}", flush=True)
        if not args.no_distributed:  # once: it takes minutes (Tansu, three processes)
            rows["distributed"] = [distributed(_Served(server.bases, server.pages), args.pg)]
            remove_scratch()
            print(f"  run 1 {'distributed':19} {rows['distributed'][0]['pages']:6} pages, "
                  f"peak RSS {rows['distributed'][0]['rss_mib']:6.1f} MiB "
                  f"{rows['distributed'][0]['parts']}", flush=True)
    medians = {name: statistics.median(r["rss_mib"] for r in runs)
               for name, runs in rows.items() if runs}
    peer = medians.get("scrapy")
    for name, label in (("crawler", "(a) the crawler"),
                        ("embedded", "(b) the runner + its crawl process"),
                        ("embedded-in-process", "(b1) the runner, crawling in-process"),
                        ("scrapy", "(c) Scrapy"),
                        ("distributed", "(d) the distributed crawl worker")):
        if name in medians:
            ratio = f"{medians[name] / peer:.2f}x Scrapy" if peer else "no peer"
            print(f"peak RSS (median) {label:38} {medians[name]:6.1f} MiB  {ratio}")
    if peer is None:
        print("Scrapy could NOT be installed: no peer, no ratio")
        return
    verdict = "met" if medians["crawler"] <= peer else "NOT met"
    print(f"budget: the worker (the crawler) <= Scrapy: {verdict}")
    if "distributed" in medians:
        verdict = "met" if medians["distributed"] <= peer else "NOT met"
        print(f"        the distributed crawl worker (Faust, the ledger) <= Scrapy: {verdict}")

if __name__ == "__main__":
    main()
