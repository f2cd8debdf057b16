"""DuckDB over the Parquet datasets: views, named queries, charts and a report.

    from analytics import connect, price_history
    con = connect(".ledger/datasets")
    price_history(con, product_id).to_pylist()

Analysts never query the event tables; the dataset projection
(`projections.datasets`) writes the Parquet files these views read.
"""

from __future__ import annotations

import importlib
from typing import Any

from analytics.queries import (
    as_of,
    crawl_health,
    out_of_stock_durations,
    price_changes_in,
    price_history,
    store_summary,
)
from analytics.views import connect, create_views

#: charts and the report pull in matplotlib: imported on first use only
_LAZY = {"chart_product": "analytics.charts", "chart_products": "analytics.charts",
         "render_report": "analytics.report", "write_report": "analytics.report"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'analytics' has no attribute {name!r}")

__all__ = [
    "as_of",
    "chart_product",
    "chart_products",
    "connect",
    "crawl_health",
    "create_views",
    "out_of_stock_durations",
    "price_changes_in",
    "price_history",
    "render_report",
    "store_summary",
    "write_report",
]
