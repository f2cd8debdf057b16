"""Crawl throughput vs Scrapy, side by side in one run (a benchmark, not a test).

    .venv/bin/python bench/crawl_bench.py [--pages 3000] [--hosts 4] [--per-host 8] [--runs 3]

A separate process (so its CPU is not the crawler's) serves realistic
schema.org product pages (bench/crawl_pages.py, ~15-16 KB, JSON-LD) and a
robots.txt on `--hosts` loopback hosts (127.0.0.2, 127.0.0.3, ... each on
its own port: distinct host names, so Scrapy's per-domain slots match our
per-origin ones). About 1 % of the URLs are under the disallowed /private/.
Each run measures, in turn:

(a) ours: `Crawler.crawl` (politeness with robots.txt, crawl_delay 0,
    max_concurrency `--per-host`; fetch + archive + extract) over a pool of
    hosts x per-host workers;
(b) embedded: `EmbeddedRunner` (same concurrency) over the same pages
    scheduled as one-shot product_page jobs in a fresh SQLite ledger, its crawler
    chosen as `crawl-ledger run` chooses it (a child process when more than one CPU,
    `--no-crawl-process`: in the runner's process), timed from its first crawl to
    its last result recorded (the crawl process's start, the runner's and their exit
    outside, as Scrapy's start and exit are outside its clock; both whole runs are
    printed too); also the
    crawl result -> job-status read model latency (record committed -> the
    catch-up that applied it returned; both run on the one database thread,
    so a record done before a catch-up starts is in that catch-up);
(c) Scrapy (bench/scrapy_peer.py) in /tmp/scrapy-venv with the same
    concurrency, ROBOTSTXT_OBEY=True, JSON-LD parsed in the callback, timed from its
    first request to its last page parsed (the spider's own clock).

The table shows medians over `--runs` runs and the ratio to Scrapy.
`--only ours --profile out.prof` profiles (a) alone with cProfile.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import cProfile
import json
import os
import resource
import shutil
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

from crawl_server import PRIVATE_EVERY, Server  # noqa: E402
from embedded_probes import first_call, instrument, percentile  # noqa: E402
from uvloop import run as run_loop  # noqa: E402  (asyncio.run on uvloop, as the runner)

#: the embedded runner's crawler: None = as `crawl-ledger run` chooses (a child process
#: when more than one CPU), True/False = `--crawl-process` / `--no-crawl-process`
IN_CHILD: bool | None = None
SCRAPY_VENV = Path(os.environ.get("SCRAPY_VENV", "/tmp/scrapy-venv"))

#: Each run's data dir (archive, ledger) is fresh, and removed only when the bench ends:
#: ext4 skips inodes freed in the last ~30 s (`recently_deleted`) one by one when it
#: allocates, so deleting 6,000 files and directories right before the next run made
#: every file and directory that run creates several times dearer (perf: ~70 % of the
#: archive's kernel time), a cost of the bench's own cleanup, not of crawling.
SCRATCH: list[Path] = []


def scratch_dir(prefix: str) -> Path:
    SCRATCH.append(Path(tempfile.mkdtemp(prefix=prefix)))
    return SCRATCH[-1]


def process_cpu(pid: int | None = None) -> float:
    """User + system CPU seconds of this process, or (Linux) of process `pid` so far."""
    if pid is None:
        times = os.times()
        return times.user + times.system
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def cpu_of(runs_in: Any) -> float:
    """CPU seconds so far of the process behind `runs_in` (its `pid`: the page server, the
    crawl process); 0.0 when it has none (a server `memory_bench`'s measured processes see
    only by its addresses, a crawler in this process)."""
    pid = getattr(runs_in, "pid", None)
    return process_cpu(pid) if pid is not None else 0.0


def cpu_per_page(seconds: float, pages: int) -> float:
    """ms of CPU a page."""
    return round(seconds / max(pages, 1) * 1000, 2)


def remove_scratch() -> None:
    while SCRATCH:
        shutil.rmtree(SCRATCH.pop(), ignore_errors=True)


# -- (a) our pipeline --------------------------------------------------------------

async def _crawl_all(urls: list[str], data_dir: Path, per_host: int, workers: int
                     ) -> tuple[float, collections.Counter[str]]:
    from domain.values import CrawlTask, Policy
    from eventstore.pack_index import open_pack_index
    from workers.crawler import build_crawler
    from workers.extraction import adapters
    from workers.fetching.addresses import AddressGuard
    from workers.fetching.http import build_client

    policy = Policy(crawl_delay=0.0, max_concurrency=per_host, respect_robots=True)
    tasks = collections.deque(
        CrawlTask(job_id=str(i), lease_id="bench", attempt=1, kind="product_page", url=url,
                  platform="generic", policy=policy)
        for i, url in enumerate(urls))
    results = collections.Counter[str]()

    guard = AddressGuard(["127.0.0.0/8"])  # the bench server, on loopback
    async with build_client(guard=guard) as client:
        crawler = build_crawler(client, data_dir, open_pack_index, adapters.REGISTRY, guard=guard)

        async def worker() -> None:
            while tasks:
                outcome = await crawler.crawl(tasks.popleft())
                ok = outcome.ok and len(outcome.observations) == 1
                results["ok" if ok else getattr(outcome, "error_kind", "no_product")] += 1

        started = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(workers)))
        return time.perf_counter() - started, results


def bench_ours(server: Server, per_host: int, profile: str | None = None) -> dict[str, Any]:
    urls = server.urls()
    data_dir = scratch_dir("crawl-bench-")
    profiler = cProfile.Profile() if profile else None
    if profiler:
        profiler.enable()
    cpu, served = process_cpu(), cpu_of(server)
    elapsed, results = run_loop(
        _crawl_all(urls, data_dir, per_host, per_host * len(server.bases)))
    cpu, served = process_cpu() - cpu, cpu_of(server) - served
    if profiler:
        profiler.disable()
        profiler.dump_stats(profile)  # type: ignore[arg-type]
    return {"pages": results["ok"], "elapsed": elapsed, "results": dict(results),
            "cpu_ms": {"process": cpu_per_page(cpu, len(urls)),
                       "server": cpu_per_page(served, len(urls))}}


# -- (b) the embedded path ---------------------------------------------------------

def schedule_pages(ledger: Any, server: Any, per_host: int, now: Any) -> None:
    """A store per served host (no crawl delay, `per_host` crawls at once, robots.txt
    obeyed) and a one-shot product_page job for each of its URLs."""
    for base, urls in zip(server.bases, server.urls_by_host()):
        store = ledger.app.register_store(
            name=f"bench {base}", base_url=base, platform="generic", now=now,
            crawl_delay=0, max_concurrency=per_host, respect_robots=True)
        for url in urls:
            ledger.app.schedule_job(kind="product_page", url=url, store_id=store, now=now,
                                    adaptive=False)


def bench_embedded(server: Server, per_host: int) -> dict[str, Any]:
    from ledger.bootstrap import bootstrap, runner_crawler
    from ledger.drivers.embedded import EmbeddedRunner
    from ledger.settings import Settings
    from runtime.clock import SystemClock

    data_dir = scratch_dir("crawl-bench-ledger-")
    settings = Settings.from_env({"LEDGER_ALLOW_NETWORKS": "127.0.0.0/8", "LEDGER_DATA_DIR": str(data_dir)})
    ledger = bootstrap(settings)
    clock = SystemClock()
    try:
        schedule_pages(ledger, server, per_host, clock.now())
        ledger.catch_up()
        db_seconds = collections.defaultdict[str, float](float)
        marks: dict[str, float] = {}
        latencies = instrument(ledger, db_seconds, marks)

        child_cpu = 0.0

        async def run() -> Any:
            nonlocal child_cpu
            async with runner_crawler(settings, IN_CHILD) as crawler:
                crawler.crawl = first_call(crawler.crawl, marks)  # type: ignore[method-assign]
                runner = EmbeddedRunner(ledger, crawler, clock,
                                        concurrency=per_host * len(server.bases),
                                        tick_seconds=0.05, recover_orphans=False)
                stats = await runner.run(until_idle=True)
                child_cpu = cpu_of(crawler)  # the crawl process, from its start
                return stats

        cpu, served = process_cpu(), cpu_of(server)
        started = time.perf_counter()
        stats = run_loop(run())
        elapsed = time.perf_counter() - started
        cpu, served = process_cpu() - cpu, cpu_of(server) - served
        counts = ledger.read.job_counts()
    finally:
        ledger.close()
    # Scrapy's clock (bench/scrapy_peer.py) runs from its first request to its last page
    # parsed, its start and exit outside; (b)'s runs from its first crawl to its last
    # result recorded, the crawl process's start, the runner's and their exit outside
    # (shown as `whole_run`)
    window = marks["last_record"] - marks["first_crawl"]
    asked = sum(map(len, server.urls_by_host()))
    return {"pages": stats.succeeded, "elapsed": window, "whole_run": round(elapsed, 2),
            "failures": dict(stats.failures),
            "jobs": counts, "latency_p50": percentile(latencies, 50),
            "latency_p99": percentile(latencies, 99), "latency_n": len(latencies),
            "cpu_ms": {"process": cpu_per_page(cpu + child_cpu, asked),
                       "runner": cpu_per_page(cpu, asked),
                       "crawl_process": cpu_per_page(child_cpu, asked),
                       "server": cpu_per_page(served, asked)},
            "db_seconds": {name: round(value, 1) for name, value in
                           sorted(db_seconds.items(), key=lambda item: -item[1])}}


# -- (c) Scrapy --------------------------------------------------------------------

def ensure_scrapy() -> str | None:
    """The venv's python if Scrapy is importable there (installing it once), else None."""
    python = SCRAPY_VENV / "bin" / "python"
    check = [str(python), "-c", "import scrapy"]
    if python.exists() and subprocess.run(check, capture_output=True).returncode == 0:
        return str(python)
    print(f"installing Scrapy into {SCRAPY_VENV} ...", flush=True)
    try:
        subprocess.run(["python3", "-m", "venv", str(SCRAPY_VENV)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", "scrapy"], check=True,
                       capture_output=True)
    except (OSError, subprocess.CalledProcessError) as error:
        print(f"Scrapy could NOT be installed ({error}); the Scrapy column is missing")
        return None
    return str(python) if subprocess.run(check, capture_output=True).returncode == 0 else None


def bench_scrapy(server: Server, python: str, per_host: int) -> dict[str, Any]:
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as urls_file:
        urls_file.write("\n".join(server.urls()))
    try:
        cpu = resource.getrusage(resource.RUSAGE_CHILDREN)
        served = cpu_of(server)
        started = time.perf_counter()
        done = subprocess.run(
            [python, str(ROOT / "bench" / "scrapy_peer.py"), urls_file.name,
             "--concurrency", str(per_host * len(server.bases)), "--per-host", str(per_host)],
            capture_output=True, text=True, timeout=1800)
        whole_run = time.perf_counter() - started
        served = cpu_of(server) - served
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        spent = after.ru_utime + after.ru_stime - cpu.ru_utime - cpu.ru_stime
    finally:
        os.unlink(urls_file.name)
    if done.returncode != 0:
        raise RuntimeError(f"scrapy_peer failed:\n{done.stderr[-2000:]}")
    result = json.loads(done.stdout.strip().splitlines()[-1])
    return {"pages": result["items"], "elapsed": result["elapsed"],
            "whole_run": round(whole_run, 2), "robots_forbidden": result["robots_forbidden"],
            "cpu_ms": {"process": cpu_per_page(spent, len(server.urls())),
                       "server": cpu_per_page(served, len(server.urls()))}}


# -- driver ------------------------------------------------------------------------

def per_min(result: dict[str, Any]) -> float:
    return float(result["pages"] / result["elapsed"] * 60)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pages", type=int, default=3000)
    parser.add_argument("--hosts", type=int, default=4)
    parser.add_argument("--per-host", type=int, default=8)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--only", choices=("ours", "embedded", "scrapy"), action="append")
    parser.add_argument("--profile", help="cProfile output of (a) (with --only ours)")
    parser.add_argument("--crawl-process", action=argparse.BooleanOptionalAction, default=None,
                        help="(b) crawls in a child process (default: as `crawl-ledger run`, "
                             "when more than one CPU)")
    args = parser.parse_args()
    global IN_CHILD
    IN_CHILD = args.crawl_process
    only = set(args.only or ("ours", "embedded", "scrapy"))
    python = ensure_scrapy() if "scrapy" in only else None
    rows: dict[str, list[dict[str, Any]]] = collections.defaultdict(list)
    with Server(args.hosts, args.pages) as server:
        print(f"{args.pages} URLs on {args.hosts} hosts ({len(server.urls()) // PRIVATE_EVERY}"
              f" disallowed by robots.txt), per-host concurrency {args.per_host},"
              f" total {args.per_host * args.hosts}, crawl_delay 0 ({_load()})", flush=True)
        benches = {
            "ours": lambda: bench_ours(server, args.per_host, args.profile),
            "embedded": lambda: bench_embedded(server, args.per_host),
            "scrapy": lambda: bench_scrapy(server, python, args.per_host),  # type: ignore[arg-type]
        }
        order = [name for name in benches if name in only and (name != "scrapy" or python)]
        try:
            for run in range(args.runs):
                # rotated each run, so no pipeline always runs first (or last) on a drifting
                # machine
                for name in order[run % len(order):] + order[:run % len(order)]:
                    rows[name].append(benches[name]())
                    _show(run, name, rows[name][-1])
        finally:
            remove_scratch()
        hits = server.hits()
    print(f"server hits: {dict(hits)}  (private must be 0); at the end: {_load()}")
    _table(rows, "scrapy" in only and python is None)


#: (b)'s budgets against Scrapy in the same run: CPU a page at most this share of Scrapy's,
#: pages a minute at least this multiple
CPU_BUDGET = 0.8
PACE_BUDGET = 1.5


def _budgets(cpu_ratio: float, pace_ratio: float) -> None:
    def met(ok: bool) -> str:
        return "met" if ok else "NOT met"

    print(f"budget: (b) CPU a page {cpu_ratio:.2f}x Scrapy's (<= {CPU_BUDGET}x):"
          f" {met(cpu_ratio <= CPU_BUDGET)}")
    print(f"budget: (b) pages/min {pace_ratio:.2f}x Scrapy's (>= {PACE_BUDGET}x):"
          f" {met(pace_ratio >= PACE_BUDGET)}")


def _load() -> str:
    """The host's load averages (1, 5, 15 min): the figures of a shared host move with it."""
    return "load average " + ", ".join(f"{value:.2f}" for value in os.getloadavg())


def _show(run: int, name: str, result: dict[str, Any]) -> None:
    extra = {k: v for k, v in result.items() if k not in ("pages", "elapsed")}
    print(f"  run {run + 1} {name:9} {result['pages']:6} pages in {result['elapsed']:6.2f}s"
          f" = {per_min(result):8,.0f} pages/min  {extra}  ({_load()})", flush=True)


def _table(rows: dict[str, list[dict[str, Any]]], scrapy_missing: bool) -> None:
    from ledger.drivers.crawl_process import use_crawl_process

    medians = {name: statistics.median(per_min(r) for r in rows[name])
               for name in ("ours", "embedded", "scrapy") if rows.get(name)}
    scrapy = medians.get("scrapy")
    labels = {"ours": "(a) Crawler.crawl (fetch+archive+extract)",
              "embedded": "(b) EmbeddedRunner + SQLite ledger" + (
                  " (1 process)" if not use_crawl_process(IN_CHILD) else ""),
              "scrapy": "(c) Scrapy"}
    print(f"\n| {'pipeline':42} | pages/min (median) | vs Scrapy |")
    print(f"|{'-' * 44}|{'-' * 20}|{'-' * 11}|")
    for name, value in medians.items():
        ratio = f"{value / scrapy:.2f}x" if scrapy else "n/a"
        print(f"| {labels[name]:42} | {value:18,.0f} | {ratio:>9} |")
    if rows.get("embedded") and rows.get("scrapy"):
        whole = {name: statistics.median(r["pages"] / r["whole_run"] * 60 for r in rows[name])
                 for name in ("embedded", "scrapy")}
        print(f"\nwhole runs (the crawl process's and the runner's start and exit; Scrapy's"
              f" interpreter, start and exit): (b) {whole['embedded']:,.0f},"
              f" (c) {whole['scrapy']:,.0f} pages/min,"
              f" {whole['embedded'] / whole['scrapy']:.2f}x")
    cpu = {name: statistics.median(r["cpu_ms"]["process"] for r in rows[name])
           for name in ("ours", "embedded", "scrapy") if rows.get(name)}
    served = statistics.median(r["cpu_ms"]["server"] for runs in rows.values() for r in runs)
    print("\nCPU a page, ms (whole processes, user + system, medians; the page server's"
          f" {served:.2f} ms apart): " + ", ".join(
              f"{labels[name][:3]} {value:.2f}" for name, value in cpu.items()))
    if rows.get("embedded") and rows.get("scrapy"):
        _budgets(cpu["embedded"] / cpu["scrapy"], medians["embedded"] / medians["scrapy"])
    if rows.get("embedded") and IN_CHILD is not False:
        runner = statistics.median(r["cpu_ms"]["runner"] for r in rows["embedded"])
        child = statistics.median(r["cpu_ms"]["crawl_process"] for r in rows["embedded"])
        print(f"  (b): the runner {runner:.2f}, its crawl process {child:.2f}; on two cores (b)"
              f" can at best take max(runner, crawl process, all of it / 2) of wall time a page")
    if "embedded" in rows:
        p50 = statistics.median(r["latency_p50"] for r in rows["embedded"]) * 1000
        p99 = statistics.median(r["latency_p99"] for r in rows["embedded"]) * 1000
        print(f"\ncrawl result -> job-status read model (embedded): p50 {p50:.0f} ms,"
              f" p99 {p99:.0f} ms (median of runs)")
    if scrapy_missing:
        print("\nScrapy could NOT be installed: no peer column, no ratio.")


if __name__ == "__main__":
    main()
