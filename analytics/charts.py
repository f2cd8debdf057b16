"""Price charts (matplotlib, Agg canvas — no display, no pyplot global state).

A product's chart is a step line per option (the price holds until the next
observation), with its out-of-stock periods shaded. Prices become floats
only here, for drawing; the data stays Decimal.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import duckdb
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.dates import date2num
from matplotlib.figure import Figure

from analytics.queries import out_of_stock_durations, price_history

OOS_COLOR = "#d62728"


def _num(moment: datetime) -> float:
    return float(date2num(moment))  # type: ignore[no-untyped-call]


def _horizon(con: duckdb.DuckDBPyConnection) -> datetime | None:
    rows = con.sql("SELECT max(observed_at) FROM price_observations").fetchall()
    value = rows[0][0] if rows else None
    return value if isinstance(value, datetime) else None


Series = tuple[list[datetime], list[float], list[float]]


def _series(history: list[dict[str, Any]]) -> dict[str, Series]:
    """Per option: times, the price paid (the special when there is one) and the regular price."""
    series: dict[str, Series] = {}
    for row in history:
        if row["price"] is None:
            continue
        label = row["option"] or "default"
        if row["pricing_type"] not in (None, "regular"):
            label += f" ({row['pricing_type']})"
        times, paid, regular = series.setdefault(label, ([], [], []))
        times.append(row["observed_at"])
        regular.append(float(row["price"]))
        paid.append(float(row["special_price"] if row["special_price"] is not None
                          else row["price"]))
    return series


def _shade_out_of_stock(ax: Axes, periods: list[dict[str, Any]], end: datetime | None) -> None:
    for n, period in enumerate(periods):
        until = period["back_at"] or end
        if until is None or until <= period["out_since"]:
            ax.axvline(_num(period["out_since"]), color=OOS_COLOR, alpha=0.4, linestyle=":")
            continue
        ax.axvspan(_num(period["out_since"]), _num(until), color=OOS_COLOR, alpha=0.15,
                   label="out of stock" if n == 0 else None)


def draw_product(ax: Axes, con: duckdb.DuckDBPyConnection, product_id: str) -> str:
    """Draw one product's price history on `ax`; returns its title."""
    history = price_history(con, product_id).to_pylist()
    periods = [p for p in out_of_stock_durations(con).to_pylist() if p["product_id"] == product_id]
    for label, (times, paid, regular) in sorted(_series(history).items()):
        x = [_num(t) for t in times]
        (line,) = ax.step(x, paid, where="post", marker="o", markersize=3, label=label)
        if paid != regular:  # on special at some point: the regular price, dashed
            ax.step(x, regular, where="post", linestyle="--", alpha=0.5, color=line.get_color(),
                    label=f"{label} regular")
    _shade_out_of_stock(ax, periods, _horizon(con))
    first = history[0] if history else {}
    title = f"{first.get('name') or product_id} — {first.get('store_name') or 'unknown store'}"
    currency = first.get("currency") or ""
    ax.set_title(title, fontsize=10)
    ax.set_ylabel(f"price {currency}".strip())
    ax.grid(True, alpha=0.3)
    if history:
        ax.legend(fontsize=7, loc="best")
    ax.xaxis_date()
    ax.tick_params(axis="x", labelrotation=30, labelsize=7)
    return title


def _figure(rows: int) -> Figure:
    figure = Figure(figsize=(9, 3.2 * max(rows, 1)), layout="constrained")
    FigureCanvasAgg(figure)
    return figure


def _save(figure: Figure, target: Path | io.BytesIO) -> None:
    figure.savefig(target, format="png", dpi=100)


def chart_product(con: duckdb.DuckDBPyConnection, product_id: str, path: Path | str) -> Path:
    """One product's price history per option as a step chart, OOS shaded, as PNG."""
    return chart_products(con, [product_id], path)


def _products_figure(con: duckdb.DuckDBPyConnection, product_ids: Sequence[str]) -> Figure:
    figure = _figure(len(product_ids))
    axes = figure.subplots(max(len(product_ids), 1), 1, squeeze=False)[:, 0]
    for ax, product_id in zip(axes, product_ids):
        draw_product(ax, con, product_id)
    return figure


def chart_products(con: duckdb.DuckDBPyConnection, product_ids: Sequence[str],
                   path: Path | str) -> Path:
    """One subplot per product (e.g. the ones that changed most), written as PNG."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    _save(_products_figure(con, product_ids), target)
    return target


def products_png(con: duckdb.DuckDBPyConnection, product_ids: Sequence[str]) -> bytes:
    """`chart_products` into memory (for the HTML report)."""
    buffer = io.BytesIO()
    _save(_products_figure(con, product_ids), buffer)
    return buffer.getvalue()


def bar_png(labels: Sequence[str], values: Sequence[float], title: str, xlabel: str) -> bytes:
    """A horizontal bar chart (e.g. success rate per store) as PNG bytes."""
    figure = _figure(1)
    figure.set_size_inches(8, 0.5 * max(len(labels), 4))
    ax = figure.subplots()
    ax.barh(list(labels), list(values), color="#1f77b4")
    ax.set_title(title, fontsize=10)
    ax.set_xlabel(xlabel)
    ax.invert_yaxis()
    buffer = io.BytesIO()
    _save(figure, buffer)
    return buffer.getvalue()
