"""Dashboard page times with 100,000 products and 10,000 jobs (issue budget: every
page's p99 < 150 ms).

Seeds a ledger through the application exactly as `bench/api_bench.py` does (the
same `seed`), starts `crawl-ledger serve` as its own process, signs in with a read
token like a browser (the session cookie) and requests each page N times (after one
untimed request: `timed`). A page's
time is the full HTTP round trip on loopback, which bounds its server time from
above. The peer, measured in the same run, is the JSON API call that reads the same
data (the page's cost over the bare query is its rendering).

    .venv/bin/python bench/dashboard_bench.py [--keep DIR] [--requests 30] [--only events]

`--only TEXT` (repeatable) measures only the pages whose name contains TEXT.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from api_bench import pct  # noqa: E402
from api_seed import STORES, open_ledger, seed, serve  # noqa: E402

from api.auth import TokenStore  # noqa: E402

BUDGET = 0.150


def timed(client: httpx.Client, path: str, requests: int) -> list[float]:
    """`requests` timed reads of `path` after one untimed one: what a server does once
    per process (compiling the page's template, loading a locale's data) is not a
    page's steady cost."""
    client.get(path)
    seconds = []
    for _ in range(requests):
        started = time.perf_counter()
        answer = client.get(path)
        seconds.append(time.perf_counter() - started)
        if answer.status_code != 200:
            raise SystemExit(f"{path}: HTTP {answer.status_code}: {answer.text[:200]}")
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--products", type=int, default=100_000)
    parser.add_argument("--jobs", type=int, default=10_000)
    parser.add_argument("--requests", type=int, default=30, help="per page")
    parser.add_argument("--keep", type=Path, help="seed into (or reuse) this data dir")
    parser.add_argument("--only", action="append", default=[],
                        help="measure only the pages whose name contains this (repeatable)")
    args = parser.parse_args()
    data = args.keep or Path(tempfile.mkdtemp(prefix="crawl-ledger-dashbench-"))
    server = None
    rows: list[tuple[str, float, float, float]] = []
    try:
        ledger = open_ledger(data)
        if ledger.source.head() == 0:
            facts = seed(ledger, args.products, args.jobs)
            (data / "bench-facts.json").write_text(json.dumps(facts))
        else:
            facts = json.loads((data / "bench-facts.json").read_text())
        print(f"{facts['products']:,} products, {facts['jobs']:,} jobs, {STORES} stores")
        secret = TokenStore(ledger.tables.tokens).create("read", "bench", datetime.now(UTC))[0]
        product = ledger.read.product_page(limit=1)[0][0]["product_id"]
        job = facts["paused_job"]
        store = facts["stores"][0]
        ledger.close()
        server, url = serve(data)
        browser = httpx.Client(base_url=url, timeout=60, follow_redirects=False)
        browser.post("/login", data={"token": secret, "next": "/"})
        api = httpx.Client(base_url=url, timeout=60,
                           headers={"Authorization": f"Bearer {secret}"})
        cases = [
            ("overview", "/", "/api/v1/jobs?limit=100"),
            ("jobs", "/jobs", "/api/v1/jobs?limit=50"),
            ("jobs ?state=paused", "/jobs?state=paused", "/api/v1/jobs?state=paused&limit=50"),
            ("jobs ?q=&sort=url", "/jobs?q=p12&sort=url", "/api/v1/jobs?limit=50"),
            ("jobs page 100", "/jobs?page=100", "/api/v1/jobs?limit=50"),
            ("job", f"/jobs/{job}", f"/api/v1/jobs/{job}"),
            ("stores", "/stores", "/api/v1/stores"),
            ("products", "/products", "/api/v1/products?limit=50"),
            ("products ?q=", "/products?q=item+7", "/api/v1/products?limit=50"),
            ("products ?store&out_of_stock", f"/products?store={store}&out_of_stock=true",
             f"/api/v1/products?store={store}&out_of_stock=true&limit=50"),
            ("products ?price range", "/products?min_price=10&max_price=20",
             "/api/v1/products?min_price=10&max_price=20&limit=50"),
            ("product (chart)", f"/products/{product}", f"/api/v1/products/{product}/history"),
            ("workers", "/workers", "/api/v1/workers"),
            ("schedule", "/schedule", "/api/v1/schedule/distribution"),
            ("search", "/search?q=item+7", "/api/v1/products?q=item+7&limit=50"),
            ("changes", "/changes", "/api/v1/products?limit=50"),
            ("changes ?period=7d&store", f"/changes?period=7d&store={store}",
             "/api/v1/products?limit=50"),
            ("events", "/events", "/api/v1/events?limit=100"),
            ("events ?type=", "/events?type=pricechanged", "/api/v1/events?limit=100"),
            ("events ?type=&before=", "/events?type=crawljob.paused&before=100000",
             "/api/v1/events?limit=100"),
            ("events ?stream=", f"/events?stream={product[:8]}", "/api/v1/events?limit=100"),
        ]
        for name, page, peer in cases:
            if args.only and not any(text in name for text in args.only):
                continue
            shown = timed(browser, page, args.requests)
            bare = timed(api, peer, args.requests)
            rows.append((name, pct(shown, 0.5), pct(shown, 0.99), pct(bare, 0.5)))
    finally:
        if server is not None:
            server.terminate()
            server.communicate(timeout=30)
        if args.keep is None:
            shutil.rmtree(data, ignore_errors=True)
    print(f"\nPage times, {args.requests} requests each (budget p99 < {BUDGET * 1000:.0f} ms); "
          "peer: the JSON API read of the same data")
    print(f"  {'page':32} {'p50 ms':>8} {'p99 ms':>8} {'peer p50':>9} {'page/peer':>10}")
    met = True
    for name, p50, p99, peer_p50 in rows:
        ok = p99 < BUDGET
        met &= ok
        print(f"  {name:32} {p50 * 1000:8.1f} {p99 * 1000:8.1f} {peer_p50 * 1000:9.1f} "
              f"{p50 / peer_p50:9.1f}x  {'met' if ok else 'NOT met'}")
    print(f"\nall pages {'within' if met else 'NOT within'} the budget")


if __name__ == "__main__":
    main()
