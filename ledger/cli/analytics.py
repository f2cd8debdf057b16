"""`crawl-ledger analytics …`: SQL, charts and reports over the Parquet datasets.

Every command first catches the datasets up with the event log (quietly),
so what it shows is fresh:

    analytics sql "SELECT …" [--json | --csv]
    analytics chart PRODUCT_ID -o price.png
    analytics report -o report.html [--top N]
    analytics shell                  how to open the views in DuckDB / Python
    analytics refresh [--rebuild]    catch up (or rebuild) with a progress bar
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from collections.abc import Callable
from datetime import date, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import duckdb
from rich.console import Console
from rich.progress import Progress

from ledger.bootstrap import bootstrap
from ledger.cli.arguments import number
from ledger.cli.errors import CommandError
from ledger.cli.output import print_table
from ledger.settings import Settings
from projections.datasets import DatasetWriter

ProgressFn = Callable[[int, int], None]


def register(sub: Any) -> None:
    group = sub.add_parser("analytics", help="DuckDB over the Parquet datasets")
    actions = group.add_subparsers(dest="action", required=True, metavar="ACTION")
    sql = actions.add_parser(
        "sql", help="run one read-only query over the dataset views (sandboxed: no files,"
        " no other databases, no settings, at most 1M rows / 128 MB of result, 1 GB of memory,"
        " 60 s; `analytics shell` is unrestricted)")
    sql.add_argument("query")
    form = sql.add_mutually_exclusive_group()
    form.add_argument("--json", action="store_true", help="a JSON array of row objects")
    form.add_argument("--csv", action="store_true", help="CSV with a header row")
    sql.set_defaults(handler=run_sql)
    chart = actions.add_parser("chart", help="a product's price history as a PNG step chart")
    chart.add_argument("product_id")
    chart.add_argument("-o", "--output", default="price.png", help="PNG path (price.png)")
    chart.set_defaults(handler=run_chart)
    report = actions.add_parser("report", help="a self-contained HTML report")
    report.add_argument("-o", "--output", default="report.html", help="HTML path")
    report.add_argument("--top", type=number(1, 100, integer=True), default=10, help="price movers shown (10)")
    report.set_defaults(handler=run_report)
    shell = actions.add_parser(
        "shell", help="how to open the views in your own, unrestricted DuckDB or Python")
    shell.set_defaults(handler=run_shell)
    snap = actions.add_parser("refresh", help="catch up (or rebuild) the Parquet datasets")
    snap.add_argument("--rebuild", action="store_true", help="delete and replay from position 0")
    snap.set_defaults(handler=run_refresh)


def refresh(rebuild: bool = False, progress: ProgressFn | None = None) -> tuple[Path, int]:
    """Catch the datasets up with the event log; returns (dataset dir, events read)."""
    ledger = bootstrap(Settings.from_env())
    try:
        writer = DatasetWriter(ledger.data_dir, ledger.source, ledger.tables.dataset_manifests)
        count = writer.rebuild(progress) if rebuild else writer.catch_up(progress)
        return writer.root, count
    finally:
        ledger.close()


def fresh_connection() -> duckdb.DuckDBPyConnection:
    from analytics import connect

    root, _ = refresh()
    return connect(root)


def _plain(value: Any) -> Any:
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, (datetime, date)):
        return value.isoformat()
    return str(value)


def _emit(columns: list[str], rows: list[dict[str, Any]], args: argparse.Namespace) -> None:
    if args.json:
        print(json.dumps(rows, default=_plain, separators=(",", ":")))
    elif args.csv:
        writer = csv.writer(sys.stdout, lineterminator="\n")
        writer.writerow(columns)
        writer.writerows([_csv(row[c]) for c in columns] for row in rows)
    else:
        print_table(f"{len(rows)} rows", columns, ([row[c] for c in columns] for row in rows))


def _csv(value: Any) -> Any:
    return "" if value is None else _plain(value) if isinstance(value, (datetime, date)) else value


def run_sql(args: argparse.Namespace) -> int:
    from analytics.sandbox import QueryRefused, run_query, sandboxed

    root, _ = refresh()
    con = sandboxed(root)
    try:
        table = run_query(con, args.query)
    except QueryRefused as refused:
        raise CommandError(f"analytics sql: {refused}") from None
    finally:
        con.close()
    if table.num_columns:
        _emit(table.column_names, table.to_pylist(), args)
    return 0


def run_chart(args: argparse.Namespace) -> int:
    from analytics import chart_product, price_history

    con = fresh_connection()
    if price_history(con, args.product_id).num_rows == 0:
        raise CommandError(f"no price observations of product {args.product_id}")
    path = chart_product(con, args.product_id, args.output)
    print(f"wrote {path}")
    return 0


def run_report(args: argparse.Namespace) -> int:
    from analytics import write_report

    if not 1 <= args.top <= 100:
        raise CommandError("--top must be 1..100")
    path = write_report(fresh_connection(), args.output, top=args.top)
    print(f"wrote {path}")
    return 0


def run_shell(args: argparse.Namespace) -> int:
    from analytics.views import view_statements

    root, _ = refresh()
    script = root / "views.sql"
    script.write_text(";\n".join(view_statements(root)) + ";\n", encoding="utf-8")
    print(f"""Datasets: {root}
Views: price_observations, stock_events, job_runs, job_states, products_latest, price_changes
Macros: product_as_of(ts), job_as_of(ts)

DuckDB CLI (views as of now; run `crawl-ledger analytics shell` again after new data):
  duckdb -cmd ".read {script}"

Python:
  from analytics import connect, price_history, price_changes_in
  con = connect("{root}")
  con.sql("SELECT * FROM products_latest LIMIT 10").show()""")
    return 0


def run_refresh(args: argparse.Namespace) -> int:
    console = Console(stderr=True)
    with Progress(console=console, transient=True) as bar:
        task = bar.add_task("rebuilding datasets" if args.rebuild else "datasets", total=None)

        def advance(position: int, head: int) -> None:
            bar.update(task, completed=position, total=max(head, 1))

        root, count = refresh(args.rebuild, advance)
    print(f"{'rebuilt' if args.rebuild else 'caught up'} {root} ({count} events read)")
    return 0
