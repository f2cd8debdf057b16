"""Read-model queries behind the dashboard's tables and overview (SQLite and PostgreSQL).

Each reads one page (offset pagination over a whitelisted sort) or one grouped count,
in SQL, so a page costs the same with 10,000 jobs or 100,000 products.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from domain.timeutil import iso
from projections.db import Database, Row
from projections.queries import PRICE_SCAN, _job, _product, price_within

__all__ = ["JOB_SORTS", "OVERDUE", "PRODUCT_SORTS", "DashboardQueries"]

#: sortable job columns (the table's headers)
JOB_SORTS = ("next_run_at", "state", "kind", "url", "last_run_at", "runs", "failures")
#: the slot of `DashboardQueries.upcoming` that holds the runs already due
OVERDUE = "overdue"
PRODUCT_SORTS = ("name", "min_price", "availability", "last_seen_at", "store_id")
#: a name filter's matches counted exactly up to this many (beyond: "more")
TEXT_SCAN = 5000


def _like(text: str) -> str:
    escaped = text.lower().replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


class DashboardQueries:
    def __init__(self, db: Database) -> None:
        self.db = db

    def _contains(self, column: str) -> str:
        """`column` contains the `_like` pattern, in any case: SQLite's LIKE ignores the
        case of ASCII letters already (as its LOWER does: no other), and skipping LOWER
        makes a scan of 100,000 names three times faster; PostgreSQL's ILIKE."""
        like = "LIKE" if self.db.dialect == "sqlite" else "ILIKE"
        return f"{column} {like} ? ESCAPE '\\'"

    def job_table(self, state: str | None = None, store_id: str | None = None,
                  kind: str | None = None, text: str | None = None, sort: str = "next_run_at",
                  descending: bool = False, offset: int = 0, limit: int = 50
                  ) -> tuple[list[Row], int]:
        """One page of jobs and how many match."""
        if sort not in JOB_SORTS:
            raise ValueError(f"cannot sort jobs by {sort!r}: use one of {', '.join(JOB_SORTS)}")
        wanted = [(clause, value) for clause, value in (
            ("state = ?", state or None), ("store_id = ?", store_id or None),
            ("kind = ?", kind or None),
            (self._contains("url"), _like(text) if text else None)) if value]
        where = " AND ".join(["1 = 1", *(clause for clause, _ in wanted)])
        params: list[Any] = [value for _, value in wanted]
        total = self.db.query(f"SELECT COUNT(*) AS n FROM job_status WHERE {where}", params)
        order = f"{sort} {'DESC' if descending else 'ASC'}, job_id"
        rows = self.db.query(f"SELECT * FROM job_status WHERE {where} ORDER BY {order} "
                             "LIMIT ? OFFSET ?", [*params, limit, offset])
        return [_job(r) for r in rows], int(total[0]["n"])

    def product_table(self, text: str | None = None, store_id: str | None = None,
                      out_of_stock: bool = False, min_price: Decimal | None = None,
                      max_price: Decimal | None = None, sort: str = "name",
                      offset: int = 0, limit: int = 50) -> tuple[list[Row], int | None]:
        """One page of products and how many match (None when a price bound is set:
        prices are decimal strings, compared exactly over at most `PRICE_SCAN` rows; and
        when a name text matches more than `TEXT_SCAN`)."""
        if sort not in PRODUCT_SORTS:
            raise ValueError(f"cannot sort products by {sort!r}: "
                             f"use one of {', '.join(PRODUCT_SORTS)}")
        wanted = [(clause, value) for clause, value in (
            ("store_id = ?", store_id or None), ("in_stock = ?", 0 if out_of_stock else None),
            (self._contains("name"), _like(text) if text else None))
            if value is not None]
        where = " AND ".join(["1 = 1", *(clause for clause, _ in wanted)])
        params: list[Any] = [value for _, value in wanted]
        # prices are decimal strings: sorted as numbers
        order = f"{'CAST(min_price AS REAL)' if sort == 'min_price' else sort}, product_id"
        if min_price is None and max_price is None and text and offset + limit <= TEXT_SCAN:
            # one scan for the count and the page: the matching ids in order (from the
            # name index alone when the text is the only filter), whole rows for the page
            ids = [r["product_id"] for r in self.db.query(
                f"SELECT product_id FROM current_products WHERE {where} ORDER BY {order} "
                "LIMIT ?", [*params, TEXT_SCAN + 1])]
            return (self._products(ids[offset:offset + limit]),
                    len(ids) if len(ids) <= TEXT_SCAN else None)
        if min_price is None and max_price is None:
            total = self.db.query(f"SELECT COUNT(*) AS n FROM current_products WHERE {where}",
                                  params)
            rows = self.db.query(f"SELECT * FROM current_products WHERE {where} ORDER BY "
                                 f"{order} LIMIT ? OFFSET ?", [*params, limit, offset])
            return [_product(r) for r in rows], int(total[0]["n"])
        # ids and prices first (from an index in name order), whole rows for the page only
        scanned = self.db.query(f"SELECT product_id, min_price FROM current_products WHERE "
                                f"{where} ORDER BY {order} LIMIT ?", [*params, PRICE_SCAN])
        return self._products([r["product_id"] for r in scanned if price_within(
            r["min_price"], min_price, max_price)][offset:offset + limit]), None

    def _products(self, ids: list[str]) -> list[Row]:
        """These products' rows, in this order."""
        if not ids:
            return []
        found = {r["product_id"]: r for r in self.db.query(
            f"SELECT * FROM current_products WHERE product_id IN "
            f"({', '.join('?' for _ in ids)})", ids)}
        return [_product(found[i]) for i in ids if i in found]

    def failing_reasons(self) -> dict[str, int]:
        rows = self.db.query("SELECT last_error_kind AS reason, COUNT(*) AS n FROM job_status "
                             "WHERE last_status = 'failed' AND last_error_kind IS NOT NULL "
                             "GROUP BY last_error_kind ORDER BY n DESC")
        return {r["reason"]: int(r["n"]) for r in rows}

    def upcoming(self, now: datetime, hours: int = 24) -> list[tuple[str, int]]:
        """Scheduled runs per hour slot over the next `hours`; runs already due are
        counted apart, in a first slot named `OVERDUE`."""
        # grouped in SQL from the (state, next_run_at, …) index: one row per hour
        rows = self.db.query(
            "SELECT slot, COUNT(*) AS n FROM (SELECT CASE WHEN next_run_at < ? THEN ? ELSE "
            "substr(next_run_at, 1, 13) END AS slot FROM job_status WHERE state = 'scheduled' "
            "AND next_run_at < ?) AS runs GROUP BY slot",
            [iso(now), OVERDUE, iso(now + timedelta(hours=hours))])
        slots = {str(r["slot"]): int(r["n"]) for r in rows}
        overdue = slots.pop(OVERDUE, 0)
        return [(OVERDUE, overdue)] * bool(overdue) + sorted(slots.items())

    def store_results(self) -> dict[str, Row]:
        """Per store: jobs, jobs whose last run failed, the latest run and its top reason."""
        rows = self.db.query(
            "SELECT store_id, COUNT(*) AS jobs, MAX(last_run_at) AS last_run_at, "
            "SUM(CASE WHEN last_status = 'failed' THEN 1 ELSE 0 END) AS failing "
            "FROM job_status GROUP BY store_id")
        reasons = self.db.query(
            "SELECT store_id, last_error_kind AS reason, COUNT(*) AS n FROM job_status WHERE "
            "last_status = 'failed' AND last_error_kind IS NOT NULL "
            "GROUP BY store_id, last_error_kind")
        found: dict[str, Row] = {str(r["store_id"]): dict(r, reasons={}) for r in rows}
        for r in reasons:
            found.setdefault(str(r["store_id"]), {"reasons": {}})["reasons"][r["reason"]] = int(
                r["n"])
        return found
