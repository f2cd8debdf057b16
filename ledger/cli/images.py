"""`crawl-ledger images fetch|show|status`: product images."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
from collections.abc import Callable
from typing import Any

from ledger.bootstrap import bootstrap, crawler_for
from ledger.cli.arguments import number
from ledger.cli.context import open_ledger
from ledger.cli.errors import CommandError
from ledger.cli.output import print_json, print_table
from ledger.drivers.embedded import run_loop
from ledger.settings import Settings
from runtime.clock import SystemClock
from runtime.db_thread import DbThread
from runtime.image_step import ImageBatch, ImageStep, ImageStore, is_sha256


def register(sub: Any) -> None:
    images = sub.add_parser("images", help="product images: download pending ones, show one")
    actions = images.add_subparsers(dest="action", required=True, metavar="ACTION")
    fetch = actions.add_parser("fetch", help="download the product images not tried yet, now")
    fetch.add_argument("--limit", type=number(1, 1_000_000, integer=True), default=None,
                       help="record at most N products (default: all pending)")
    fetch.add_argument("--concurrency", type=number(1, 64, integer=True), default=4,
                       help="downloads at once (default 4)")
    fetch.add_argument("--every", type=number(0.1, 86400), default=None, metavar="SECONDS",
                       help="keep running: look for new pending images every SECONDS until "
                            "SIGTERM/SIGINT (beside `serve` when bots crawl: they download "
                            "no images)")
    fetch.add_argument("--json", action="store_true")
    fetch.set_defaults(handler=fetch_images)
    show = actions.add_parser("show", help="a stored image: file, facts, products showing it")
    show.add_argument("sha256")
    show.add_argument("--json", action="store_true")
    show.set_defaults(handler=show_image)
    status = actions.add_parser("status", help="products by image status")
    status.add_argument("--json", action="store_true")
    status.set_defaults(handler=image_status)


def fetch_images(args: argparse.Namespace) -> int:
    limit = None if args.limit is None else int(args.limit)

    def report(done: ImageBatch) -> None:
        summary = {"downloads": done.downloads, "stored": done.stored, "failed": done.failed,
                   "new_files": done.new_files, "failures": done.failures}
        if args.json:
            print_json(summary)
        else:
            reasons = ", ".join(f"{k} {v}" for k, v in sorted(done.failures.items()))
            print(f"{done.downloads} download(s): {done.stored} product(s) stored "
                  f"({done.new_files} new file(s)), {done.failed} failed"
                  + (f" ({reasons})" if reasons else ""), flush=True)

    every = None if args.every is None else float(args.every)
    done = run_loop(_fetch(Settings.from_env(), limit, int(args.concurrency), every, report))
    if every is None:
        report(done)
    return 0


async def _fetch(settings: Settings, limit: int | None, concurrency: int,
                 every: float | None, report: Callable[[ImageBatch], None]) -> ImageBatch:
    """One pass (`every` None), or a pass every `every` seconds until a signal, each
    pass that recorded something reported as it ends."""
    db = DbThread(1)
    ledger = await db.call(bootstrap, settings)
    stop = asyncio.Event()
    if every is not None:
        for sig in (signal.SIGINT, signal.SIGTERM):
            asyncio.get_running_loop().add_signal_handler(sig, stop.set)
    try:
        async with crawler_for(settings) as crawler:
            step = ImageStep(ledger, crawler, SystemClock(), db, concurrency=concurrency)
            if every is None:
                return await step.run(limit)
            total = ImageBatch()
            while not stop.is_set():
                done = await step.run(limit)
                if done.downloads or done.recorded:
                    report(done)
                total.add(done)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), every)
            return total
    finally:
        await db.call(ledger.close)
        db.close()


def show_image(args: argparse.Namespace) -> int:
    if not is_sha256(args.sha256):
        raise CommandError(f"{args.sha256!r} is not a sha256 (64 lowercase hex digits)")
    with open_ledger() as ledger:
        store = ImageStore(ledger.data_dir)
        rows = ledger.read.image_products(args.sha256)
    if not store.has(args.sha256) and not rows:
        raise CommandError(f"no image stored under {args.sha256}")
    first = rows[0] if rows else {}
    found = {"sha256": args.sha256, "path": str(store.path(args.sha256)),
             "on_disk": store.has(args.sha256),
             **{k: first.get(k) for k in ("format", "width", "height", "bytes")},
             "products": [{"product_id": r["product_id"], "url": r["image_url"]} for r in rows]}
    if args.json:
        print_json(found)
        return 0
    print(f"image {args.sha256}  {found['format'] or '?'} {found['width'] or '?'}x"
          f"{found['height'] or '?'}, {found['bytes'] or '?'} bytes")
    print(f"  {found['path']}" + ("" if found["on_disk"] else "  (missing on disk)"))
    print_table("products showing it", ["product", "image URL"],
                ([r["product_id"], r["url"]] for r in found["products"]))
    return 0


def image_status(args: argparse.Namespace) -> int:
    with open_ledger() as ledger:
        counts = ledger.read.image_counts()
    if args.json:
        print_json(counts)
    else:
        print_table("product images", ["status", "products"], sorted(counts.items()))
    return 0


__all__ = ["register"]
