"""Queries over the read models: what the scheduler, CLI and API read."""

from __future__ import annotations

import re
from collections.abc import Collection
from datetime import datetime
from decimal import Decimal
from typing import Any

from domain.timeutil import iso
from domain.values import shown_in_stock
from projections import product_images
from projections.db import Database, Row
from projections.framework import loads
from projections.product_search import PRODUCT_SEARCH
from projections.search import DOC, SearchQuery, bm25_weights, search_table

#: the table and id column of each kind of id a user may abbreviate
_IDS = {"job": ("job_status", "job_id"), "product": ("current_products", "product_id"),
        "store": ("stores", "store_id")}
#: the due jobs, most urgent first (`job_status`'s first index holds every column the
#: filter and the sort read)
_DUE = ("SELECT {columns} FROM job_status WHERE state = 'scheduled' AND next_run_at <= ? "
        "ORDER BY priority + boost DESC, next_run_at, job_id LIMIT ?")

JOB_STATES = ("scheduled", "dispatched", "leased", "succeeded", "failed", "completed",
              "dead", "paused", "cancelled")


class ReadModel:
    """Read-only access to the job, store, product and stock read models."""

    def __init__(self, db: Database) -> None:
        self.db = db

    # jobs -------------------------------------------------------------------
    def due_jobs(self, now: datetime, limit: int = 100) -> list[Row]:
        """Scheduled jobs whose next run is due, most urgent first. Jobs of disabled
        stores are among them: the command side records each one `Skipped` (once a
        cycle) rather than passing it over in silence."""
        return self.db.query(_DUE.format(columns="*"), (iso(now), limit))

    def due_urls(self, now: datetime, limit: int = 100) -> list[Row]:
        """`due_jobs`, in its order, with only each job's `job_id` and `url`: what a
        scheduler's slot is chosen from (`runtime.scheduler.next_slot`), a few columns
        instead of the row's 27 for the hundred or so candidates of every tick."""
        return self.db.query(_DUE.format(columns="job_id, url"), (iso(now), limit))

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

    def job_page(self, state: str | None = None, store_id: str | None = None,
                 kind: str | None = None, after: str | None = None,
                 limit: int = 100) -> tuple[list[Row], str | None]:
        """One page of jobs in job id order after the cursor `after`, and the next
        cursor (None on the last page): filtered and limited in SQL, so a page reads
        `limit + 1` rows, not the whole table."""
        wanted = [(clause, value) for clause, value in (
            ("state = ?", state or None), ("store_id = ?", store_id or None),
            ("kind = ?", kind), ("job_id > ?", after)) if value is not None]
        where = " AND ".join(["1 = 1", *(clause for clause, _ in wanted)])
        rows = self.db.query(f"SELECT * FROM job_status WHERE {where} ORDER BY job_id LIMIT ?",
                             [*(value for _, value in wanted), limit + 1])
        page = rows[:limit]
        return [_job(r) for r in page], page[-1]["job_id"] if len(rows) > limit else None

    def ids_starting(self, kind: str, prefix: str, limit: int = 2) -> list[str]:
        """Ids of jobs, products or stores (`kind`) that start with `prefix` (hex and
        dashes only: no LIKE wildcard reaches the query)."""
        table, column = _IDS[kind]
        if not re.fullmatch(r"[0-9a-f-]+", prefix):
            return []
        rows = self.db.query(f"SELECT {column} FROM {table} WHERE {column} LIKE ? "
                             f"ORDER BY {column} LIMIT ?", (prefix + "%", limit))
        return [str(r[column]) for r in rows]

    def stores_named(self, name: str) -> list[str]:
        """Ids of the stores with exactly this name."""
        rows = self.db.query("SELECT store_id FROM stores WHERE name = ? ORDER BY store_id",
                             (name,))
        return [str(r["store_id"]) for r in rows]

    def job(self, job_id: str) -> Row | None:
        rows = self.db.query("SELECT * FROM job_status WHERE job_id = ?", (job_id,))
        return _job(rows[0]) if rows else None

    def job_count(self, state: str) -> int:
        """The jobs in one state (read from the `(state, …)` index, not the whole table)."""
        rows = self.db.query("SELECT COUNT(*) AS n FROM job_status WHERE state = ?", (state,))
        return int(rows[0]["n"])

    def job_counts(self) -> dict[str, int]:
        rows = self.db.query("SELECT state, COUNT(*) AS n FROM job_status GROUP BY state")
        return {r["state"]: int(r["n"]) for r in rows}

    # stores and products ------------------------------------------------------
    def workers(self) -> list[Row]:
        return self.db.query("SELECT * FROM workers ORDER BY started_at, name")

    def stores(self) -> list[Row]:
        """Every store, with its extraction health (`projections.extraction_health`;
        None before any crawl of it counted)."""
        return self.db.query(
            "SELECT s.*, e.crawls AS extraction_crawls, e.no_price_ratio, "
            "e.low_confidence_ratio, e.misses_ratio FROM stores s "
            "LEFT JOIN store_extraction e ON e.store_id = s.store_id "
            "ORDER BY s.name, s.store_id")

    def products(self, store_id: str | None = None, out_of_stock: bool = False) -> list[Row]:
        sql, params = "SELECT * FROM current_products WHERE 1 = 1", list[Any]()
        if store_id:
            sql, params = sql + " AND store_id = ?", [*params, store_id]
        if out_of_stock:
            sql += " AND in_stock = 0"
        return [_product(r) for r in self.db.query(sql + " ORDER BY name, product_id", params)]

    def product_page(self, store_id: str | None = None, out_of_stock: bool = False,
                     min_price: Decimal | None = None, max_price: Decimal | None = None,
                     after: str | None = None, limit: int = 100
                     ) -> tuple[list[Row], str | None]:
        """One page of products in product id order after the cursor `after`, and the
        next cursor (None on the last page); filtered and limited in SQL.

        Prices are decimal strings, compared exactly here: a page bounded by price
        examines at most `PRICE_SCAN` products (id and price only) and reads the
        rows of those that match, so it may hold fewer than `limit` products (even
        none) while a next cursor remains.
        """
        wanted = [(clause, value) for clause, value in (
            ("store_id = ?", store_id or None), ("in_stock = ?", 0 if out_of_stock else None),
            ("product_id > ?", after)) if value is not None]
        where = " AND ".join(["1 = 1", *(clause for clause, _ in wanted)])
        params = [value for _, value in wanted]
        if min_price is None and max_price is None:
            rows = self.db.query(f"SELECT * FROM current_products WHERE {where} "
                                 "ORDER BY product_id LIMIT ?", [*params, limit + 1])
            page = rows[:limit]
            return ([_product(r) for r in page],
                    page[-1]["product_id"] if len(rows) > limit else None)
        scanned = self.db.query(f"SELECT product_id, min_price FROM current_products WHERE "
                                f"{where} ORDER BY product_id LIMIT ?", [*params, PRICE_SCAN])
        matching = [r["product_id"] for r in scanned
                    if price_within(r["min_price"], min_price, max_price)]
        ids = matching[:limit]
        following = (ids[-1] if len(matching) > limit
                     else scanned[-1]["product_id"] if len(scanned) == PRICE_SCAN else None)
        rows = []
        for start in range(0, len(ids), 500):
            part = ids[start:start + 500]
            rows += self.db.query(f"SELECT * FROM current_products WHERE product_id IN "
                                  f"({', '.join('?' for _ in part)}) ORDER BY product_id", part)
        return [_product(r) for r in rows], following

    def search_products(self, text: str, store_id: str | None = None, limit: int = 50
                        ) -> list[Row]:
        """Products holding every word of `text` (the last one as a prefix) in their
        name, brand, category, store name or description, best match first
        (`projections.search`). Refuses a text without words."""
        query = SearchQuery.parse(text)
        store, scope = (" AND s.store_id = ?", [store_id]) if store_id else ("", [])
        if self.db.dialect == "sqlite":  # equal scores in index order (`projections.search`)
            fts = search_table("product_search")
            score = f"bm25({fts}, {bm25_weights(PRODUCT_SEARCH.search)}) AS score"
            if store_id:
                hits = (f"SELECT s.product_id, {score}, {fts}.rowid AS tie FROM {fts} JOIN "
                        f"product_search s ON s.rowid = {fts}.rowid WHERE {fts} MATCH ?{store} "
                        f"ORDER BY score, tie LIMIT ?")
            else:  # ranked on the index alone; only the best `limit` rows are joined
                hits = (f"SELECT s.product_id, best.score, best.tie FROM (SELECT rowid AS tie, "
                        f"{score} FROM {fts} WHERE {fts} MATCH ? ORDER BY score, tie LIMIT ?) "
                        f"best JOIN product_search s ON s.rowid = best.tie")
            terms = query.fts5()
        else:  # ts_rank grows with relevance; negated, it orders like bm25
            hits = (f"SELECT s.product_id, -ts_rank(s.{DOC}, q) AS score, s.product_id AS tie "
                    f"FROM product_search s, to_tsquery('simple', ?) q WHERE s.{DOC} @@ q{store} "
                    f"ORDER BY score, tie LIMIT ?")
            terms = query.tsquery()
        rows = self.db.query(f"SELECT p.* FROM ({hits}) hit JOIN current_products p ON "
                             f"p.product_id = hit.product_id ORDER BY hit.score, hit.tie",
                             [terms, *scope, limit])
        return [_product(r) for r in rows]

    def product(self, product_id: str) -> Row | None:
        rows = self.db.query("SELECT * FROM current_products WHERE product_id = ?", (product_id,))
        return _product(rows[0]) if rows else None

    def labels(self, products: Collection[str], jobs: Collection[str]) -> dict[str, str]:
        """Each known product's name and job's URL by id (two queries, whatever the count)."""
        found: dict[str, str] = {}
        for table, key, label, ids in (("current_products", "product_id", "name", products),
                                       ("job_status", "job_id", "url", jobs)):
            wanted = sorted(set(ids))
            for start in range(0, len(wanted), 500):
                part = wanted[start:start + 500]
                found.update((str(r["id"]), str(r["label"])) for r in self.db.query(
                    f"SELECT {key} AS id, {label} AS label FROM {table} WHERE {key} IN "
                    f"({', '.join('?' for _ in part)})", part))
        return found

    def pending_images(self, limit: int) -> list[Row]:
        return product_images.pending_images(self.db, limit)

    def product_image(self, product_id: str) -> Row | None:
        return product_images.product_image(self.db, product_id)

    def image_products(self, sha256: str) -> list[Row]:
        return product_images.image_products(self.db, sha256)

    def image_counts(self) -> dict[str, int]:
        return product_images.image_counts(self.db)

    def stock_status(self, store_id: str | None = None) -> list[Row]:
        sql, params = "SELECT * FROM stock_status", []
        if store_id:
            sql, params = sql + " WHERE store_id = ?", [store_id]
        return self.db.query(sql + " ORDER BY store_id, product_id", params)


#: the most products one price-bounded page examines (`ReadModel.product_page`)
PRICE_SCAN = 2000


def price_within(value: Any, low: Decimal | None, high: Decimal | None) -> bool:
    """Whether a decimal-string price lies within the bounds (exactly; None: unpriced)."""
    if low is None and high is None:
        return True
    if value is None:
        return False
    amount = Decimal(str(value))
    return (low is None or amount >= low) and (high is None or amount <= high)


def _job(row: Row) -> Row:
    return dict(row, last_outcome=loads(row.get("last_outcome")))


def _product(row: Row) -> Row:
    out: dict[str, Any] = dict(row, offers=loads(row.get("offers")) or [])
    out["in_stock"] = shown_in_stock(bool(row.get("in_stock")), row.get("availability"))
    return out
