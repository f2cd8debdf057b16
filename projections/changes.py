"""Product changes: every price move and stock change, one row each, for the
dashboard's "what changed" view (`/changes`), and the ledger's latest crawl time
the view's periods count back from.

A row is keyed by the product and the stream version of its event, so a
redelivered event writes the same row again (idempotent) and a rebuild from
position 0 yields the same table (deterministic). A price move compares what a
shopper pays (the special price when there is one) and keeps the change in basis
points, so the biggest drops and rises are an indexed `ORDER BY`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from decimal import Decimal, InvalidOperation
from typing import Any

from domain.envelope import Envelope
from projections.db import Database, Row
from projections.framework import Handler, Projection, Rows, Table

__all__ = ["ChangeQueries", "ProductChangesProjection", "change_bp", "period_start"]

PRODUCT_CHANGES = Table(
    name="product_changes",
    key=("product_id", "version"),
    columns={
        "product_id": "text", "version": "int", "kind": "text", "at": "text",
        "old_price": "text", "new_price": "text", "currency": "text", "option_name": "text",
        "change_bp": "int", "reason": "text",
    },
    indexes=(("kind", "at"), ("at",)),
)

#: one row ("latest"): the time of the newest crawl outcome for a product
CHANGES_CLOCK = Table(
    name="changes_clock",
    key=("clock",),
    columns={"clock": "text", "latest_at": "text"},
)

_CLOCK_EVENTS = ("Observed", "Sighted", "Missed", "PriceChanged", "BackInStock", "WentOutOfStock")


def _effective(price: Any, special: Any) -> Decimal | None:
    value = special if special not in (None, "") else price
    if value in (None, ""):
        return None
    try:
        return Decimal(str(value))
    except InvalidOperation:
        return None


def change_bp(old: Decimal, new: Decimal) -> int:
    """The change from `old` to `new` in basis points (1 % = 100), rounded to whole ones."""
    return int(((new - old) * 10000 / old).to_integral_value())


@dataclass
class ProductChangesProjection(Projection):
    """Price moves and stock changes per product, and the latest crawl time."""

    name: str = field(default="product_changes", init=False)
    tables: tuple[Table, ...] = field(default=(PRODUCT_CHANGES, CHANGES_CLOCK), init=False)

    def handlers(self) -> dict[str, Handler]:
        handlers: dict[str, Handler] = {f"Product.{k}": _clock for k in _CLOCK_EVENTS}
        handlers["Product.PriceChanged"] = _price_changed
        handlers["Product.BackInStock"] = _stock_changed("back")
        handlers["Product.WentOutOfStock"] = _stock_changed("gone")
        return handlers


def _clock(env: Envelope, rows: Rows) -> None:
    row = rows.get("changes_clock", "latest")
    if row is None or (row["latest_at"] or "") < env.occurred_at:
        rows.put("changes_clock", {"clock": "latest", "latest_at": env.occurred_at})


def _change_row(env: Envelope, kind: str, **values: Any) -> Row:
    row: Row = {"product_id": env.stream_id, "version": env.version, "kind": kind,
                "at": env.occurred_at, "old_price": None, "new_price": None, "currency": None,
                "option_name": None, "change_bp": None, "reason": None}
    row.update(values)
    return row


def _price_changed(env: Envelope, rows: Rows) -> None:
    _clock(env, rows)
    p = env.payload
    old = _effective(p.get("old"), p.get("old_special"))
    new = _effective(p.get("new"), p.get("new_special"))
    if old is None or new is None or old == new or old <= 0:
        return  # a price appearing or vanishing is not a move
    rows.put("product_changes", _change_row(
        env, "drop" if new < old else "rise", old_price=str(old), new_price=str(new),
        currency=p.get("currency"), option_name=p.get("option"), change_bp=change_bp(old, new)))


def _stock_changed(kind: str) -> Handler:
    def apply(env: Envelope, rows: Rows) -> None:
        _clock(env, rows)
        rows.put("product_changes", _change_row(env, kind, reason=env.payload.get("reason")))
    return apply


def period_start(latest: str, days: int) -> str:
    """The start of the `days`-day period ending at `latest`, in the ledger's time format."""
    start = datetime.fromisoformat(latest) - timedelta(days=days)
    return start.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


#: the order of each section: biggest change first, then newest
_ORDER = {"drop": "c.change_bp ASC, c.at DESC", "rise": "c.change_bp DESC, c.at DESC",
          "back": "c.at DESC", "gone": "c.at DESC"}


class ChangeQueries:
    """The changes view's reads: the latest crawl time and one section's rows."""

    def __init__(self, db: Database) -> None:
        self.db = db

    def latest_at(self) -> str | None:
        rows = self.db.query("SELECT latest_at FROM changes_clock WHERE clock = 'latest'")
        return rows[0]["latest_at"] if rows else None

    def section(self, kind: str, since: str, store_id: str | None = None,
                category: str | None = None, limit: int = 50) -> list[Row]:
        """The changes of one kind at or after `since`, joined with the product's current
        name, store and category, filtered by store and category, biggest first."""
        sql = ("SELECT c.*, p.name, p.store_id, p.category FROM product_changes c "
               "JOIN current_products p ON p.product_id = c.product_id "
               "WHERE c.kind = ? AND c.at >= ?")
        params: list[Any] = [kind, since]
        if store_id:
            sql, params = sql + " AND p.store_id = ?", [*params, store_id]
        if category:
            sql, params = sql + " AND p.category = ?", [*params, category]
        return self.db.query(f"{sql} ORDER BY {_ORDER[kind]}, c.product_id LIMIT ?",
                             [*params, limit])
