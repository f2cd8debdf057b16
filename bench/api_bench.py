"""HTTP API benchmarks against their peers, side by side in one run (not a test).

    .venv/bin/python bench/api_bench.py [--products 100000] [--jobs 10000]
        [--requests 200] [--events 200] [--clients 200] [--each 10] [--keep DIR]

Seeds a fresh embedded (SQLite) ledger through the application, as a crawl would:
100 stores, one catalog result of 1,000 products per store (100,000 products),
feed results that chain product-page jobs up to 10,000 jobs, and some of those
jobs paused, failed or leased so the state filters select something. Nothing is
written to the read models directly: they are caught up from the event log.
Then `crawl-ledger serve` runs as its own process (as an operator starts it) on a
free loopback port, and this process is the client:

1. list endpoints, one keep-alive client, `--requests` requests per case (p50/p99):
   /stores, /jobs and /products (first page, filters, walking the cursor pages),
   /events at spread positions. Peer: the read-model call the route makes, called
   in this process on the same database (what HTTP, auth, catch-up and JSON add);
2. the live stream: `--events` events committed one by one (a job paused and
   resumed by a second ledger on the same store, as the runner would), the time
   from each commit returning to its arrival on GET /events/stream (p50/p99).
   Peer: a client polling GET /events every 100 ms (the stream's own interval);
3. `--clients` concurrent clients (own connections), each sending a mix of list
   requests: errors counted, throughput and latency. Peer: one client sending the
   same mix one request after the other.

Budgets (issue 13): list endpoints p99 < 50 ms; an event on the stream < 200 ms
after its commit; 200 concurrent clients served without error.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import shutil
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import httpx  # noqa: E402
from api_seed import STORES, open_ledger, seed, serve  # noqa: E402

from api.auth import TokenStore  # noqa: E402
from ledger.bootstrap import Ledger  # noqa: E402

LIST_BUDGET = 0.050
STREAM_BUDGET = 0.200


# 1. list endpoints -------------------------------------------------------------------
def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * p))]


class Walk:
    """Successive cursor pages of one list, starting over after the last one: over HTTP
    (`params`, `advance`), or in process when called with a page function."""

    def __init__(self, page: Callable[..., tuple[list[Any], str | None]] | None = None) -> None:
        self.page = page
        self.cursor: str | None = None

    def params(self) -> dict[str, Any]:
        return {"cursor": self.cursor} if self.cursor else {}

    def advance(self, cursor: str | None) -> None:
        self.cursor = cursor

    def __call__(self, i: int) -> None:
        assert self.page is not None
        self.advance(self.page(after=self.cursor)[1])


def timed(requests: int, call: Callable[[int], Any]) -> list[float]:
    """Seconds per call (or what the call returns: the part of it it timed itself)."""
    call(0)  # warm
    times = []
    for i in range(requests):
        started = time.perf_counter()
        took = call(i)
        times.append(took if isinstance(took, float) else time.perf_counter() - started)
    return times


def list_cases(ledger: Ledger, facts: dict[str, Any]) -> list[tuple[str, str, Any, Any]]:
    """(name, path, params: a dict, a Walk or a function of i, the in-process peer of i)."""
    read = ledger.read
    store = facts["stores"][7]
    head = facts["events"]
    spread = [head * k // 50 for k in range(50)]
    jobs, products = Walk(read.job_page), Walk(read.product_page)
    low, high = Decimal(20), Decimal(30)
    return [
        ("stores", "/api/v1/stores", {}, lambda i: read.stores()),
        ("jobs", "/api/v1/jobs", {}, lambda i: read.job_page()),
        ("jobs ?state=paused", "/api/v1/jobs", {"state": "paused"},
         lambda i: read.job_page(state="paused")),
        ("jobs ?store&kind", "/api/v1/jobs", {"store": store, "kind": "product_page"},
         lambda i: read.job_page(store_id=store, kind="product_page")),
        ("jobs cursor pages", "/api/v1/jobs", Walk(), jobs),
        ("products", "/api/v1/products", {}, lambda i: read.product_page()),
        ("products ?store", "/api/v1/products", {"store": store},
         lambda i: read.product_page(store_id=store)),
        ("products ?out_of_stock", "/api/v1/products", {"out_of_stock": "true"},
         lambda i: read.product_page(out_of_stock=True)),
        ("products ?min&max_price", "/api/v1/products", {"min_price": "20", "max_price": "30"},
         lambda i: read.product_page(min_price=low, max_price=high)),
        ("products ?min_price (1 %)", "/api/v1/products", {"min_price": "104"},
         lambda i: read.product_page(min_price=Decimal(104))),
        ("products cursor pages", "/api/v1/products", Walk(), products),
        ("events ?after (500)", "/api/v1/events",
         lambda i: {"after": spread[i % len(spread)]},
         lambda i: ledger.source.read(spread[i % len(spread)], 500)),
    ]


def bench_lists(url: str, secret: str, ledger: Ledger, facts: dict[str, Any],
                requests: int) -> list[dict[str, Any]]:
    results = []
    with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {secret}"},
                      timeout=120) as http:
        for name, path, params, peer in list_cases(ledger, facts):
            sizes: list[int] = []

            def call(i: int, path: str = path, params: Any = params,
                     sizes: list[int] = sizes) -> float:
                """One request, timed until its whole body is in (not parsed)."""
                query = (params.params() if isinstance(params, Walk)
                         else params(i) if callable(params) else params)
                started = time.perf_counter()
                answer = http.get(path, params=query)
                took = time.perf_counter() - started
                answer.raise_for_status()
                body = answer.json()
                items = body["items"] if isinstance(body, dict) else body
                sizes.append(len(items))
                if isinstance(params, Walk):
                    params.advance(body.get("next_cursor"))
                return took

            http_times = timed(requests, call)
            peer_times = timed(requests, peer)
            results.append({"name": name, "http": http_times, "peer": peer_times,
                            "items": statistics.median(sizes)})
    return results


# 2. commit -> SSE arrival ------------------------------------------------------------
def bench_stream(url: str, secret: str, data: Path, job: str, events: int
                 ) -> tuple[list[float], list[float]]:
    """Latencies (s) from each commit to its arrival: on the stream, and by polling."""
    writer = open_ledger(data)
    headers = {"Authorization": f"Bearer {secret}"}
    try:
        return (_latencies(writer, job, events, lambda start, seen, stop:
                           _listen(url, headers, start, seen, stop)),
                _latencies(writer, job, events, lambda start, seen, stop:
                           _poll(url, headers, start, seen, stop)))
    finally:
        writer.close()


def _latencies(writer: Ledger, job: str, events: int,
               receive: Callable[[int, dict[int, float], threading.Event], None]
               ) -> list[float]:
    start = writer.source.head()
    seen: dict[int, float] = {}
    stop = threading.Event()
    listener = threading.Thread(target=receive, args=(start, seen, stop), daemon=True)
    listener.start()
    time.sleep(0.5)  # connected and caught up
    committed: dict[int, float] = {}
    rng = random.Random(7)
    paused = writer.app.get_job(job).state == "paused"
    for _ in range(events):
        time.sleep(rng.uniform(0.01, 0.09))  # random phase against the 100 ms poll
        (writer.app.resume if paused else writer.app.pause)(job, datetime.now(UTC))
        at = time.perf_counter()
        paused = not paused
        committed[writer.source.head()] = at
    deadline = time.monotonic() + 5
    while len(seen.keys() & committed.keys()) < events and time.monotonic() < deadline:
        time.sleep(0.01)
    stop.set()
    listener.join(5)
    missing = committed.keys() - seen.keys()
    if missing:
        raise SystemExit(f"{len(missing)} committed events never arrived")
    return [seen[position] - at for position, at in committed.items()]


def _listen(url: str, headers: dict[str, str], start: int, seen: dict[int, float],
            stop: threading.Event) -> None:
    with httpx.stream("GET", f"{url}/api/v1/events/stream", params={"after": start},
                      headers=headers, timeout=60) as response:
        for line in response.iter_lines():
            if line.startswith("id: "):
                seen[int(line[4:])] = time.perf_counter()
            if stop.is_set():
                return


def _poll(url: str, headers: dict[str, str], start: int, seen: dict[int, float],
          stop: threading.Event) -> None:
    position = start
    with httpx.Client(base_url=url, headers=headers, timeout=60) as http:
        while not stop.is_set():
            items = http.get("/api/v1/events", params={"after": position}).json()["items"]
            now = time.perf_counter()
            for item in items:
                seen[item["position"]] = now
                position = item["position"]
            if len(items) < 500:
                time.sleep(0.1)


# 3. concurrent clients ---------------------------------------------------------------
def mix(facts: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    store = facts["stores"][3]
    return [("/api/v1/jobs", {}), ("/api/v1/products", {}), ("/api/v1/stores", {}),
            ("/api/v1/jobs", {"state": "failed"}), ("/api/v1/products", {"store": store}),
            ("/api/v1/events", {"after": facts["events"] // 2, "limit": 100})]


async def _client(url: str, headers: dict[str, str], requests: list[tuple[str, dict[str, Any]]],
                  times: list[float], errors: list[str], gate: asyncio.Event) -> None:
    async with httpx.AsyncClient(base_url=url, headers=headers, timeout=60) as http:
        await gate.wait()
        for path, params in requests:
            started = time.perf_counter()
            try:
                answer = await http.get(path, params=params)
                if answer.status_code != 200:
                    errors.append(f"{answer.status_code} {path}")
            except httpx.HTTPError as error:
                errors.append(f"{type(error).__name__} {path}")
            times.append(time.perf_counter() - started)


async def _clients(url: str, secret: str, clients: int, each: int,
                   facts: dict[str, Any]) -> dict[str, Any]:
    requests = mix(facts)
    headers = {"Authorization": f"Bearer {secret}"}
    times: list[float] = []
    errors: list[str] = []
    gate = asyncio.Event()
    tasks = [asyncio.create_task(_client(
        url, headers, [requests[(c + k) % len(requests)] for k in range(each)], times, errors,
        gate)) for c in range(clients)]
    await asyncio.sleep(0.2)
    started = time.perf_counter()
    gate.set()
    await asyncio.gather(*tasks)
    elapsed = time.perf_counter() - started
    return {"clients": clients, "requests": len(times), "errors": errors, "seconds": elapsed,
            "rate": len(times) / elapsed, "p50": pct(times, 0.5), "p99": pct(times, 0.99)}


def bench_clients(url: str, secret: str, clients: int, each: int,
                  facts: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    one = asyncio.run(_clients(url, secret, 1, clients * each // 10, facts))
    many = asyncio.run(_clients(url, secret, clients, each, facts))
    return many, one


# report ------------------------------------------------------------------------------
def ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f}"


def verdict(met: bool) -> str:
    return "met" if met else "NOT MET"


def report_lists(results: list[dict[str, Any]]) -> bool:
    print(f"\n1. list endpoints, one keep-alive client (budget p99 < {ms(LIST_BUDGET)} ms)")
    print(f"  {'case':<27}{'items':>6}{'HTTP p50':>10}{'p99':>8}{'peer p50':>10}{'p99':>8}"
          f"{'HTTP/peer':>10}  budget")
    met = True
    for r in results:
        h50, h99, p50, p99 = (pct(r["http"], 0.5), pct(r["http"], 0.99), pct(r["peer"], 0.5),
                              pct(r["peer"], 0.99))
        met &= h99 < LIST_BUDGET
        print(f"  {r['name']:<27}{r['items']:>6.0f}{ms(h50):>10}{ms(h99):>8}{ms(p50):>10}"
              f"{ms(p99):>8}{h50 / p50:>9.1f}x  {verdict(h99 < LIST_BUDGET)}")
    print("  (ms; peer: the read-model call the route makes, in this process)")
    return met


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--products", type=int, default=100_000)
    parser.add_argument("--jobs", type=int, default=10_000)
    parser.add_argument("--requests", type=int, default=200, help="per list case")
    parser.add_argument("--events", type=int, default=200, help="for the stream latency")
    parser.add_argument("--clients", type=int, default=200)
    parser.add_argument("--each", type=int, default=10, help="requests per concurrent client")
    parser.add_argument("--keep", type=Path, help="seed into (or reuse) this data dir")
    args = parser.parse_args()
    data = args.keep or Path(tempfile.mkdtemp(prefix="crawl-ledger-apibench-"))
    server = None
    try:
        ledger = open_ledger(data)
        if ledger.source.head() == 0:
            facts = seed(ledger, args.products, args.jobs)
            print(f"seeded through the application in {facts['seconds']:.0f} s (products "
                  f"{facts['recorded']:.0f} s): {facts['products']:,} products, "
                  f"{facts['jobs']:,} jobs, {STORES} stores, {facts['events']:,} events")
            (data / "bench-facts.json").write_text(json.dumps(facts))
        else:
            facts = json.loads((data / "bench-facts.json").read_text())
            print(f"reusing {data}: {facts['products']:,} products, {facts['jobs']:,} jobs")
        secret = TokenStore(ledger.tables.tokens).create("read", "bench", datetime.now(UTC))[0]
        server, url = serve(data)
        lists = bench_lists(url, secret, ledger, facts, args.requests)
        stream, polled = bench_stream(url, secret, data, facts["paused_job"], args.events)
        many, one = bench_clients(url, secret, args.clients, args.each, facts)
        ledger.close()
    finally:
        if server is not None:
            server.terminate()
            server.communicate(timeout=30)
        if args.keep is None:
            shutil.rmtree(data, ignore_errors=True)
    lists_met = report_lists(lists)
    s50, s99, q50, q99 = (pct(stream, 0.5), pct(stream, 0.99), pct(polled, 0.5),
                          pct(polled, 0.99))
    print(f"\n2. commit -> arrival, {args.events} events (budget p99 < {ms(STREAM_BUDGET)} ms)")
    print(f"  GET /events/stream (SSE):      p50 {ms(s50)} ms, p99 {ms(s99)} ms, "
          f"max {ms(max(stream))} ms  {verdict(s99 < STREAM_BUDGET)}")
    print(f"  peer, polling GET /events 100 ms: p50 {ms(q50)} ms, p99 {ms(q99)} ms; "
          f"stream/peer p50 {s50 / q50:.2f}x, p99 {s99 / q99:.2f}x")
    clients_met = not many["errors"]
    print(f"\n3. {many['clients']} concurrent clients, {args.each} requests each "
          "(budget: no error)")
    print(f"  {many['requests']} requests, {len(many['errors'])} errors, "
          f"{many['rate']:.0f} requests/s, p50 {ms(many['p50'])} ms, p99 {ms(many['p99'])} ms"
          f"  {verdict(clients_met)}")
    if many["errors"]:
        print(f"  first errors: {many['errors'][:5]}")
    print(f"  peer, one client in sequence: {one['requests']} requests, {one['rate']:.0f} "
          f"requests/s, p50 {ms(one['p50'])} ms; concurrent/one {many['rate'] / one['rate']:.2f}x")
    met = lists_met and s99 < STREAM_BUDGET and clients_met
    print(f"\nall budgets {'met' if met else 'NOT met'}")


if __name__ == "__main__":
    main()
