"""Queries over the read models: what the scheduler, CLI and API read."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from domain.timeutil import iso
from projections.db import Database, Row
from projections.framework import loads

JOB_STATES = ("scheduled", "dispatched", "leased", "succeeded", "failed", "completed",
              "dead", "paused", "cancelled")


class ReadModel:
    """Read-only access to the job, store, product and stock read models."""

    def __init__(self, db: Database) -> None:
        self.db = db

    # jobs -------------------------------------------------------------------
    def due_jobs(self, now: datetime, limit: int = 100) -> list[Row]:
        """Scheduled jobs whose next run is due, most urgent first (not of disabled stores)."""
        return self.db.query(
            "SELECT * FROM job_status WHERE state = 'scheduled' AND next_run_at <= ? "
            "AND (store_id IS NULL OR store_id NOT IN "
            "(SELECT store_id FROM stores WHERE enabled = 0)) "
            "ORDER BY priority + boost DESC, next_run_at, job_id LIMIT ?", (iso(now), limit))

    def dispatched_jobs(self, limit: int = 100) -> list[Row]:
        return self.db.query(
            "SELECT * FROM job_status WHERE state = 'dispatched' "
            "ORDER BY priority + boost DESC, next_run_at, job_id LIMIT ?", (limit,))

    def expired_leases(self, now: datetime) -> list[Row]:
        return self.db.query(
            "SELECT * FROM job_status WHERE state = 'leased' AND lease_expires_at <= ? "
            "ORDER BY lease_expires_at", (iso(now),))

    def next_run_at(self) -> str | None:
        rows = self.db.query("SELECT MIN(next_run_at) AS t FROM job_status WHERE state = 'scheduled'")
        return rows[0]["t"] if rows else None

    def jobs(self, state: str | None = None, store_id: str | None = None) -> list[Row]:
        sql, params = "SELECT * FROM job_status WHERE 1 = 1", list[Any]()
        if state:
            sql, params = sql + " AND state = ?", [*params, state]
        if store_id:
            sql, params = sql + " AND store_id = ?", [*params, store_id]
        return [_job(r) for r in self.db.query(sql + " ORDER BY created_at, job_id", params)]

    def job(self, job_id: str) -> Row | None:
        rows = self.db.query("SELECT * FROM job_status WHERE job_id = ?", (job_id,))
        return _job(rows[0]) if rows else None

    def job_counts(self) -> dict[str, int]:
        rows = self.db.query("SELECT state, COUNT(*) AS n FROM job_status GROUP BY state")
        return {r["state"]: int(r["n"]) for r in rows}

    # stores and products ------------------------------------------------------
    def workers(self) -> list[Row]:
        return self.db.query("SELECT * FROM workers ORDER BY started_at, name")

    def stores(self) -> list[Row]:
        return self.db.query("SELECT * FROM stores ORDER BY name, store_id")

    def products(self, store_id: str | None = None, out_of_stock: bool = False) -> list[Row]:
        sql, params = "SELECT * FROM current_products WHERE 1 = 1", list[Any]()
        if store_id:
            sql, params = sql + " AND store_id = ?", [*params, store_id]
        if out_of_stock:
            sql += " AND in_stock = 0"
        return [_product(r) for r in self.db.query(sql + " ORDER BY name, product_id", params)]

    def product(self, product_id: str) -> Row | None:
        rows = self.db.query("SELECT * FROM current_products WHERE product_id = ?", (product_id,))
        return _product(rows[0]) if rows else None

    def stock_status(self, store_id: str | None = None) -> list[Row]:
        sql, params = "SELECT * FROM stock_status", []
        if store_id:
            sql, params = sql + " WHERE store_id = ?", [store_id]
        return self.db.query(sql + " ORDER BY store_id, product_id", params)


def _job(row: Row) -> Row:
    return dict(row, last_outcome=loads(row.get("last_outcome")))


def _product(row: Row) -> Row:
    out: dict[str, Any] = dict(row, offers=loads(row.get("offers")) or [])
    out["in_stock"] = bool(row.get("in_stock"))
    return out
