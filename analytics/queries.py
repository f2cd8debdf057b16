"""Named analytics queries over the dataset views; each returns an Arrow table.

All times are UTC (`TIMESTAMPTZ`); money columns are `DECIMAL(18,4)`
(Python `Decimal` in `to_pylist()`), never floats. `pct_change` and
`success_rate` are ratios, so they are `DOUBLE`.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

import duckdb
import pyarrow as pa

Direction = Literal["drop", "rise"]

PRICE_HISTORY = """
SELECT observed_at, option, pricing_type, price, special_price, currency, availability,
       quantity, name, store_name, event_id, position, job_id
FROM price_observations
WHERE product_id = $product_id
ORDER BY option, pricing_type, observed_at, position
"""

PRICE_CHANGES_IN = """
SELECT changed_at, previous_at, store_id, store_name, product_id, name, category, option,
       pricing_type, currency, old_price, new_price, abs_change, pct_change, event_id, position
FROM price_changes
WHERE changed_at >= $start AND changed_at < $end AND abs_change {sign} 0
ORDER BY pct_change {order}, abs_change {order}, position
LIMIT $limit
"""

#: the latest moment the datasets know of: "still out" durations run up to it
HORIZON = """
SELECT greatest(
    (SELECT max(observed_at) FROM price_observations),
    (SELECT max(occurred_at) FROM stock_events),
    (SELECT max(finished_at) FROM job_runs))
"""

OUT_OF_STOCK_DURATIONS = f"""
WITH transitions AS (
    SELECT *, lead(occurred_at) OVER w AS next_at, lead(event_type) OVER w AS next_type
    FROM stock_events
    WHERE event_type IN ('went_out_of_stock', 'back_in_stock')
    WINDOW w AS (PARTITION BY product_id ORDER BY occurred_at, position)
), periods AS (
    SELECT store_id, store_name, product_id, provider_product_id, name, reason,
           occurred_at AS out_since,
           CASE WHEN next_type = 'back_in_stock' THEN next_at END AS back_at,
           event_id, position
    FROM transitions
    WHERE event_type = 'went_out_of_stock'
      AND ($store_id IS NULL OR store_id = $store_id)
)
SELECT *, back_at IS NULL AS still_out,
       round(epoch(coalesce(back_at, ({HORIZON})) - out_since) / 3600, 2)::DOUBLE AS hours
FROM periods
ORDER BY hours DESC, out_since, position
"""

STORE_SUMMARY = """
WITH status AS (
    SELECT product_id, event_type = 'went_out_of_stock' AS is_out
    FROM stock_events
    WHERE event_type IN ('went_out_of_stock', 'back_in_stock')
    QUALIFY row_number() OVER (PARTITION BY product_id ORDER BY occurred_at DESC, position DESC) = 1
)
SELECT l.store_id, any_value(l.store_name) AS store_name, l.category, l.currency,
       count(DISTINCT l.product_id) AS products,
       count(DISTINCT l.product_id) FILTER (WHERE NOT coalesce(s.is_out, false)) AS in_stock,
       CAST(avg(l.price) AS DECIMAL(18, 2)) AS avg_price,
       count(*) AS options
FROM products_latest l LEFT JOIN status s USING (product_id)
GROUP BY l.store_id, l.category, l.currency
ORDER BY store_name, l.store_id, l.category, l.currency
"""

#: one filtered scan of the product (pruned to the dates up to `at`), the latest row per
#: offer by a small window, then the stock status at `at` (ASOF join)
AS_OF = """
WITH known AS (
    SELECT $at::TIMESTAMPTZ AS as_of, * EXCLUDE (date)
    FROM price_observations
    WHERE product_id = $product_id AND observed_at <= $at::TIMESTAMPTZ
      AND date <= CAST(timezone('UTC', $at::TIMESTAMPTZ) AS DATE)
    QUALIFY row_number() OVER (
        PARTITION BY coalesce(pricing_type, '') || ':' || coalesce(option, '')
        ORDER BY observed_at DESC, position DESC) = 1
), stock AS (
    SELECT product_id, occurred_at, event_type FROM stock_events
    WHERE product_id = $product_id AND event_type IN ('went_out_of_stock', 'back_in_stock')
)
SELECT k.as_of, k.product_id, k.store_name, k.name, k.option, k.pricing_type,
       k.observed_at, k.price, k.special_price, k.currency, k.availability, k.quantity,
       coalesce(s.event_type <> 'went_out_of_stock', true) AS in_stock,
       CASE WHEN s.event_type = 'went_out_of_stock' THEN s.occurred_at END AS out_since,
       k.event_id, k.position
FROM known k ASOF LEFT JOIN stock s ON k.product_id = s.product_id AND k.as_of >= s.occurred_at
ORDER BY k.option, k.pricing_type
"""

CRAWL_HEALTH = """
WITH counted AS (
    SELECT date AS day, store_id, any_value(store_name) AS store_name, outcome, error_kind,
           count(*) AS n
    FROM job_runs GROUP BY date, store_id, outcome, error_kind
)
SELECT day, store_id, any_value(store_name) AS store_name, sum(n)::BIGINT AS attempts,
       coalesce(sum(n) FILTER (WHERE outcome = 'succeeded'), 0)::BIGINT AS succeeded,
       coalesce(sum(n) FILTER (WHERE outcome = 'failed'), 0)::BIGINT AS failed,
       coalesce(sum(n) FILTER (WHERE outcome = 'expired'), 0)::BIGINT AS expired,
       round(coalesce(sum(n) FILTER (WHERE outcome = 'succeeded'), 0) / sum(n), 4)::DOUBLE
           AS success_rate,
       coalesce(string_agg(error_kind || ' ' || n, ', ' ORDER BY n DESC, error_kind)
                FILTER (WHERE error_kind IS NOT NULL), '') AS failures_by_kind
FROM counted
GROUP BY day, store_id
ORDER BY day, store_name, store_id
"""


def _run(con: duckdb.DuckDBPyConnection, sql: str, params: dict[str, Any]) -> pa.Table:
    return con.sql(sql, params=params).to_arrow_table()


def price_history(con: duckdb.DuckDBPyConnection, product_id: str) -> pa.Table:
    """Every observation of one product, by option and time."""
    return _run(con, PRICE_HISTORY, {"product_id": str(product_id)})


def price_changes_in(con: duckdb.DuckDBPyConnection, start: datetime, end: datetime,
                     limit: int = 10, direction: Direction = "drop") -> pa.Table:
    """The largest relative price drops (or rises) with `start <= changed_at < end`."""
    if direction not in ("drop", "rise"):
        raise ValueError(f"direction must be 'drop' or 'rise', got {direction!r}")
    if limit < 1:
        raise ValueError(f"limit must be >= 1, got {limit}")
    sql = PRICE_CHANGES_IN.format(sign="<" if direction == "drop" else ">",
                                  order="ASC" if direction == "drop" else "DESC")
    return _run(con, sql, {"start": start, "end": end, "limit": limit})


def out_of_stock_durations(con: duckdb.DuckDBPyConnection,
                           store_id: str | None = None) -> pa.Table:
    """Each out-of-stock period (since, back at or still out, hours), longest first."""
    return _run(con, OUT_OF_STOCK_DURATIONS, {"store_id": store_id})


def store_summary(con: duckdb.DuckDBPyConnection) -> pa.Table:
    """Per store and category: products, products in stock now, average latest price."""
    return _run(con, STORE_SUMMARY, {})


def as_of(con: duckdb.DuckDBPyConnection, product_id: str, at: datetime) -> pa.Table:
    """What we knew about a product at `at`: its last observation per option, stock status."""
    return _run(con, AS_OF, {"product_id": str(product_id), "at": at})


def crawl_health(con: duckdb.DuckDBPyConnection) -> pa.Table:
    """Per day and store: attempts, outcomes, success rate, failures by kind."""
    return _run(con, CRAWL_HEALTH, {})
