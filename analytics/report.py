"""A self-contained HTML report: tables and charts (base64 PNGs), no external assets.

Sections: top price movers (drops and rises, with their charts), store
summary, crawl health (with success rate per store), out-of-stock durations.
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from datetime import UTC, datetime
from decimal import Decimal
from html import escape
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa

from analytics.charts import bar_png, products_png
from analytics.queries import crawl_health, out_of_stock_durations, price_changes_in, store_summary

#: columns shown per table (the queries return more)
MOVER_COLUMNS = ("changed_at", "store_name", "name", "option", "currency", "old_price",
                 "new_price", "abs_change", "pct_change")
OOS_COLUMNS = ("store_name", "name", "reason", "out_since", "back_at", "still_out", "hours")
STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em; color: #222; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em; font-size: 0.85em; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.6em; text-align: left; }
th { background: #f0f0f0; } td.num { text-align: right; font-variant-numeric: tabular-nums; }
img { max-width: 100%; }
"""


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, datetime):
        return value.strftime("%Y-%m-%d %H:%M")
    return escape(str(value))


def html_table(table: pa.Table, columns: Sequence[str] | None = None, limit: int = 50) -> str:
    names = [c for c in (columns or table.column_names) if c in table.column_names]
    if table.num_rows == 0:
        return "<p><em>none</em></p>"
    head = "".join(f"<th>{escape(c)}</th>" for c in names)
    body = []
    for row in table.select(names).slice(0, limit).to_pylist():
        cells = "".join(
            f"<td class=num>{_cell(v)}</td>" if isinstance(v, (int, float, Decimal))
            else f"<td>{_cell(v)}</td>" for v in row.values())
        body.append(f"<tr>{cells}</tr>")
    more = f"<p>… {table.num_rows - limit} more rows</p>" if table.num_rows > limit else ""
    return f"<table><tr>{head}</tr>{''.join(body)}</table>{more}"


def img(png: bytes, alt: str) -> str:
    data = base64.b64encode(png).decode("ascii")
    return f'<img src="data:image/png;base64,{data}" alt="{escape(alt)}">'


def _movers(con: duckdb.DuckDBPyConnection, top: int) -> str:
    start, end = datetime(1970, 1, 1, tzinfo=UTC), datetime(9999, 1, 1, tzinfo=UTC)
    drops = price_changes_in(con, start, end, top, "drop")
    rises = price_changes_in(con, start, end, top, "rise")
    ids = list(dict.fromkeys(drops.column("product_id").to_pylist()[:3]
                             + rises.column("product_id").to_pylist()[:2]))
    chart = img(products_png(con, ids), "price history of the top movers") if ids else ""
    return (f"<h2>Top price movers</h2><h3>Largest drops</h3>{html_table(drops, MOVER_COLUMNS)}"
            f"<h3>Largest rises</h3>{html_table(rises, MOVER_COLUMNS)}{chart}")


def _health(con: duckdb.DuckDBPyConnection) -> str:
    health = crawl_health(con)
    per_store: dict[str, list[int]] = {}
    for row in health.to_pylist():
        counts = per_store.setdefault(row["store_name"] or "(no store)", [0, 0])
        counts[0] += row["succeeded"]
        counts[1] += row["attempts"]
    chart = ""
    if per_store:
        labels = sorted(per_store)
        rates = [100.0 * per_store[s][0] / per_store[s][1] for s in labels]
        chart = img(bar_png(labels, rates, "crawl success rate", "% of attempts"),
                    "crawl success rate per store")
    return f"<h2>Crawl health</h2>{chart}{html_table(health)}"


def render_report(con: duckdb.DuckDBPyConnection, top: int = 10,
                  generated_at: datetime | None = None) -> str:
    """The whole report as one HTML string."""
    when = (generated_at or datetime.now(UTC)).strftime("%Y-%m-%d %H:%M UTC")
    sections = [
        _movers(con, top),
        f"<h2>Store summary</h2>{html_table(store_summary(con))}",
        _health(con),
        f"<h2>Out-of-stock durations</h2>{html_table(out_of_stock_durations(con), OOS_COLUMNS)}",
    ]
    return (f"<!doctype html><html><head><meta charset=utf-8><title>crawl-ledger report"
            f"</title><style>{STYLE}</style></head><body><h1>crawl-ledger report</h1>"
            f"<p>generated {when}</p>{''.join(sections)}</body></html>")


def write_report(con: duckdb.DuckDBPyConnection, path: Path | str, top: int = 10) -> Path:
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(render_report(con, top), encoding="utf-8")
    return target


__all__ = ["html_table", "render_report", "write_report"]
