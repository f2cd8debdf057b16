"""`crawl-ledger products list|show`."""

from __future__ import annotations

import argparse
from typing import Any

from domain.values import shown_in_stock
from ledger.cli.arguments import number
from ledger.cli.context import open_ledger
from ledger.cli.history import (
    add_show_parser,
    history_title,
    offer_line,
    parse_as_of,
    print_history,
    stream_as_of,
)
from ledger.cli.ids import resolve_id, resolve_store
from ledger.cli.output import print_json, print_table, shown_id
from runtime.as_of import product_as_of


def register(sub: Any) -> None:
    products = sub.add_parser("products", help="current products, prices and stock")
    actions = products.add_subparsers(dest="action", required=True, metavar="ACTION")
    lst = actions.add_parser("list", help="list products")
    lst.add_argument("--store", help="a store's id, id prefix or (unique) name")
    lst.add_argument("--out-of-stock", action="store_true")
    lst.add_argument("--json", action="store_true")
    lst.add_argument("--wide", action="store_true", help="whole ids and names")
    lst.set_defaults(handler=list_products)
    search = actions.add_parser(
        "search", help="full-text search: products holding every word in their name, brand, "
        "category, store name or description (the last word as a prefix), best match first")
    search.add_argument("text")
    search.add_argument("--store")
    search.add_argument("--limit", type=number(1, 1000, integer=True), default=50)
    search.add_argument("--json", action="store_true")
    search.add_argument("--wide", action="store_true", help="whole ids and names")
    search.set_defaults(handler=search_products)
    add_show_parser(actions, "product_id", "a product's current state and history", show_product)


def list_products(args: argparse.Namespace) -> int:
    with open_ledger() as ledger:
        store = resolve_store(ledger, args.store) if args.store else None
        rows = ledger.read.products(store_id=store, out_of_stock=args.out_of_stock)
    return _print_products(rows, args.json, args.wide)


def search_products(args: argparse.Namespace) -> int:
    with open_ledger() as ledger:
        store = resolve_store(ledger, args.store) if args.store else None
        rows = ledger.read.search_products(args.text, store_id=store,
                                           limit=int(args.limit))
    return _print_products(rows, args.json, args.wide)


def _print_products(rows: list[dict[str, Any]], as_json: bool, wide: bool) -> int:
    if as_json:
        print_json([dict(r, id=r["product_id"]) for r in rows])
        return 0
    print_table("products", ["id", "name", "brand", "price", "in stock", "misses", "last seen"],
                ([shown_id(r["product_id"], wide), r["name"], r["brand"] or "",
                  f"{r['min_price'] or '-'} {r['currency'] or ''}",
                  _stock_cell(r["in_stock"], r["out_of_stock_since"]),
                  r["consecutive_misses"], (r["last_seen_at"] or "")[:19]] for r in rows), wide)
    return 0


def _stock_cell(in_stock: bool | None, since: str | None) -> str:
    if in_stock is None:
        return "unknown"
    return "yes" if in_stock else f"no (since {(since or '')[:10]})"


def show_product(args: argparse.Namespace) -> int:
    with open_ledger() as ledger:
        product_id = resolve_id(ledger, "product", args.product_id)
        product, history = stream_as_of(ledger, ledger.app.get_product(product_id),
                                        args.as_of, None if args.all else args.last)
        current = (product_as_of(ledger, product, parse_as_of(args.as_of))["state"] if args.as_of
                   else ledger.read.product(str(product.id)))
    if args.json:
        print_json({"id": str(product.id), "current": current,
                    "events": [e.to_dict() for e in history]})
        return 0
    print(f"product {product.id}  {product.name}  ({product.brand or 'no brand'},"
          f" {product.category or 'no category'})" + (f"  as of {args.as_of}" if args.as_of else ""))
    print(f"  store {product.store_id}, provider id {product.provider_product_id}"
          + (f", {product.url}" if product.url else ""))
    known = shown_in_stock(product.in_stock, product.availability)
    stock = ("in stock" if known else "stock not stated" if known is None else "OUT OF STOCK"
             + (f" since {product.out_of_stock_since}" if product.out_of_stock_since else ""))
    observations = current["observations"] if current else product.observations  # with sightings
    print(f"  {stock}; {observations} observations; misses {product.consecutive_misses}")
    for offer in product.offers.values():
        print(f"  {offer_line(offer)}")
    print_history(history_title(product, history), history)
    return 0

