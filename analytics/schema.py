"""The Parquet datasets as DuckDB sees them: the contract with the dataset writer.

Parquet files under `<dataset dir>/<dataset>/date=YYYY-MM-DD/` (a date's parts)
and `month=YYYY-MM/` (closed dates merged) carry these columns, `date` (the
row's UTC date partition) included. When a dataset has no files yet
its view is an empty relation of exactly these types, so queries never fail
on a fresh data dir. A contract test checks the writer's files against this.
"""

from __future__ import annotations

MONEY = "DECIMAL(18,4)"
TS = "TIMESTAMPTZ"

PRICE_OBSERVATIONS: dict[str, str] = {
    "observed_at": TS, "store_id": "VARCHAR", "store_name": "VARCHAR", "product_id": "VARCHAR",
    "provider_product_id": "VARCHAR", "name": "VARCHAR", "brand": "VARCHAR",
    "category": "VARCHAR", "option": "VARCHAR", "price": MONEY, "special_price": MONEY,
    "currency": "VARCHAR", "pricing_type": "VARCHAR", "availability": "VARCHAR",
    "quantity": "BIGINT", "event_id": "VARCHAR", "position": "BIGINT", "job_id": "VARCHAR",
    "attempt": "INTEGER", "extractor_version": "VARCHAR", "content_hash": "VARCHAR",
    "date": "DATE",
}
STOCK_EVENTS: dict[str, str] = {
    "occurred_at": TS, "store_id": "VARCHAR", "store_name": "VARCHAR", "product_id": "VARCHAR",
    "provider_product_id": "VARCHAR", "name": "VARCHAR", "event_type": "VARCHAR",
    "reason": "VARCHAR", "consecutive_misses": "INTEGER", "job_id": "VARCHAR",
    "event_id": "VARCHAR", "position": "BIGINT", "date": "DATE",
}
JOB_RUNS: dict[str, str] = {
    "job_id": "VARCHAR", "kind": "VARCHAR", "store_id": "VARCHAR", "store_name": "VARCHAR",
    "attempt": "INTEGER", "worker": "VARCHAR", "leased_at": TS, "finished_at": TS,
    "outcome": "VARCHAR", "error_kind": "VARCHAR", "message": "VARCHAR", "duration": "DOUBLE",
    "http_status": "INTEGER", "items": "BIGINT", "lease_event_id": "VARCHAR",
    "event_id": "VARCHAR", "position": "BIGINT", "date": "DATE",
}
#: the rows behind the `price_changes` view (which adds abs_change and pct_change)
PRICE_CHANGES: dict[str, str] = {
    "changed_at": TS, "previous_at": TS, "store_id": "VARCHAR", "store_name": "VARCHAR",
    "product_id": "VARCHAR", "provider_product_id": "VARCHAR", "name": "VARCHAR",
    "brand": "VARCHAR", "category": "VARCHAR", "option": "VARCHAR", "pricing_type": "VARCHAR",
    "currency": "VARCHAR", "old_price": MONEY, "new_price": MONEY, "old_special_price": MONEY,
    "new_special_price": MONEY, "event_id": "VARCHAR", "position": "BIGINT",
    "job_id": "VARCHAR", "date": "DATE",
}
#: one row per job event that sets its state or next run, both as they are after it
JOB_STATES: dict[str, str] = {
    "changed_at": TS, "job_id": "VARCHAR", "kind": "VARCHAR", "store_id": "VARCHAR",
    "store_name": "VARCHAR", "event_type": "VARCHAR", "state": "VARCHAR", "state_since": TS,
    "next_run_at": TS, "event_id": "VARCHAR", "position": "BIGINT", "date": "DATE",
}
DATASETS: dict[str, dict[str, str]] = {
    "price_observations": PRICE_OBSERVATIONS,
    "stock_events": STOCK_EVENTS,
    "job_runs": JOB_RUNS,
    "price_changes": PRICE_CHANGES,
    "job_states": JOB_STATES,
}
