"""`crawl-ledger extract FILE` and `crawl-ledger extract backfill`.

`extract FILE` runs the extractors on a saved page or payload and records nothing
(`--explain`: field by field, with sources and the alternatives that lost).
`extract backfill [--store ID] [--since TIME] [--dry-run]` runs the current
extractor over the archived raw pages of earlier crawls and records the products
it reads differently (`runtime.admin.backfill`); `--dry-run` prints old → new only.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from ledger.cli.errors import CommandError
from workers.extraction.adapters.base import Extraction, ExtractionError, Page
from workers.extraction.extract import default_task, extract_page, menu_cross_check, products_to_json
from workers.fetching.charset import decode

__all__ = ["register", "run_extract"]


def register(sub: Any) -> None:
    parser = sub.add_parser("extract", help="extract products from a saved page or API payload")
    parser.add_argument("file", type=Path,
                        help="an HTML page, feed or JSON payload; or `backfill` to re-extract"
                             " the archived pages of earlier crawls")
    parser.add_argument("--url", help="the URL the file was fetched from (default: file://…)")
    parser.add_argument("--json", action="store_true", help="print the products as JSON")
    parser.add_argument("--adapter", help="force an adapter by name instead of detecting one")
    parser.add_argument("--explain", action="store_true",
                        help="per field of the main product: the value chosen, its source and "
                             "the alternatives that lost")
    parser.add_argument("--store", help="backfill: only this store's pages")
    parser.add_argument("--since", help="backfill: only pages crawled since (ISO 8601)")
    parser.add_argument("--dry-run", action="store_true",
                        help="backfill: print what would change, record nothing")
    parser.set_defaults(handler=run_extract)


def run_extract(args: argparse.Namespace) -> int:
    if str(args.file) == "backfill" and not args.file.exists():
        return run_backfill(args)
    if args.store or args.since or args.dry_run:
        raise CommandError("--store, --since and --dry-run belong to `extract backfill`")
    body = _read(args.file)
    text, _ = decode(body)
    url = args.url or args.file.resolve().as_uri()
    content_type = "application/json" if text.lstrip().startswith(("{", "[")) else "text/html"
    page = Page(url=url, text=text, content_type=content_type, body=body)
    try:
        adapter, extraction = extract_page(page, adapter_name=args.adapter)
    except ExtractionError as error:
        # Nothing readable on the page is a result ("no products"), not an error.
        _print(args.json, [], note=f"no products: {error}")
        return 0
    if args.explain:
        _explain(adapter, page, extraction, args.json)
        return 0
    _print(args.json, products_to_json(extraction.observations), note=f"adapter: {adapter.name}")
    return 0


def _explain(adapter: Any, page: Page, extraction: Extraction, as_json: bool) -> None:
    explain = getattr(adapter, "explain", None)
    if explain is None:  # a platform API adapter: one source for every field
        choices = []
        note = f"adapter {adapter.name}: every field from the platform's own data"
        checked = menu_cross_check(page, extraction) if adapter.name != "generic-menu" else None
        note += f"; {checked.line()}" if checked is not None else ""
    else:
        choices = [vars(c) for c in explain(page, default_task(page.url))]
        note = f"adapter {adapter.name}"
    if as_json:
        print(json.dumps(choices, ensure_ascii=False, indent=2, default=list))
        print(f"crawl-ledger: {note}", file=sys.stderr)
        return
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"main product, field by field — {note}")
    for column in ("field", "chosen", "source → why it won", "alternatives (value — source)"):
        table.add_column(column)
    for choice in choices:
        lost = "\n".join(f"{value} — {source}" for value, source in choice["alternatives"])
        source = choice["source"] + (f"\n→ {choice['why']}" if choice.get("why") else "")
        table.add_row(choice["field"], choice["value"] or "", source, lost)
    Console(width=None if sys.stdout.isatty() else 160).print(table)


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except IsADirectoryError:
        raise CommandError(f"{path} is a directory, not a file") from None
    except FileNotFoundError:
        raise CommandError(f"{path}: no such file") from None
    except PermissionError:
        raise CommandError(f"{path}: permission denied") from None
    except OSError as error:
        raise CommandError(f"{path}: cannot read ({error.strerror})") from None


_COLUMNS = ("name", "brand", "sku", "option", "price", "special", "currency", "availability")


def _row(product: dict[str, Any], offer: dict[str, Any]) -> tuple[str, ...]:
    cells = (
        product["name"],
        product["brand"],
        product["sku"],
        offer.get("option"),
        offer.get("price"),
        offer.get("special_price"),
        offer.get("currency"),
        offer.get("availability") or product["availability"],
    )
    return tuple(cell or "" for cell in cells)


def _print(as_json: bool, products: list[dict[str, Any]], note: str) -> None:
    if as_json:
        print(json.dumps(products, ensure_ascii=False, indent=2))
        print(f"crawl-ledger: {note}", file=sys.stderr)  # stdout stays pure JSON
        return
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"{len(products)} product(s) — {note}")
    for column in _COLUMNS:
        table.add_column(column)
    for product in products:
        for offer in product["offers"] or [{}]:
            table.add_row(*_row(product, offer))
    # Piped output has no terminal width; do not wrap cells into unreadable slivers.
    Console(width=None if sys.stdout.isatty() else 160).print(table)


def run_backfill(args: argparse.Namespace) -> int:
    from domain.timeutil import parse_iso
    from ledger.cli.context import open_ledger, utcnow
    from runtime.admin.backfill import apply, plan

    try:
        since = parse_iso(args.since) if args.since else None
    except ValueError:
        raise CommandError(f"--since {args.since!r} is not an ISO 8601 time") from None
    with open_ledger() as ledger:
        if args.store and args.store not in {s["store_id"] for s in ledger.read.stores()}:
            raise CommandError(f"unknown store id {args.store}")
        differences = plan(ledger, ledger.archive(), args.store, since)
        shown = list(differences) if args.dry_run else apply(ledger, differences, utcnow)
    rows = [{"product_id": d.product_id, "name": d.name, "job_id": d.job_id,
             "content_hash": d.content_hash, "extractor_version": d.extractor_version,
             "old": d.old, "new": d.new} for d in shown]
    verb = "would record" if args.dry_run else "recorded"
    if args.json:
        print(json.dumps(rows, ensure_ascii=False, indent=2))
        print(f"crawl-ledger: {verb} {len(rows)} re-extraction(s)", file=sys.stderr)
        return 0
    from ledger.cli.output import print_table

    print_table(f"{verb} {len(rows)} re-extraction(s)", ["product", "name", "old", "new"],
                [[r["product_id"][:8], r["name"][:40], r["old"], r["new"]] for r in rows])
    return 0
