"""Current products (latest offers, availability, misses) and out-of-stock status."""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from domain.envelope import Envelope
from domain.sightings import SIGHTED
from projections.db import Row
from projections.framework import Handler, Projection, Rows, Table, creator, dumps, updater

CURRENT_PRODUCTS = Table(
    name="current_products",
    key=("product_id",),
    columns={
        "product_id": "text", "store_id": "text", "provider_product_id": "text", "name": "text",
        "brand": "text", "category": "text", "url": "text", "image_url": "text",
        "offers": "json", "min_price": "text", "currency": "text", "availability": "text",
        "quantity": "int", "in_stock": "int", "out_of_stock_since": "text",
        "consecutive_misses": "int", "observations": "int", "price_changes": "int",
        "first_seen_at": "text", "last_seen_at": "text", "last_price_change_at": "text",
        "last_job": "text", "version": "int",
    },
    # (name, product_id, min_price): the dashboard's product table in name order reads
    # one page of index entries, and a price-bounded page scans ids and prices from the
    # index alone (100,000 products: a full sort per page otherwise)
    indexes=(("store_id", "product_id"), ("in_stock", "product_id"),
             ("name", "product_id", "min_price")),
)

OUT_OF_STOCK = Table(
    name="stock_status",
    key=("product_id",),
    columns={
        "product_id": "text", "store_id": "text", "status": "text", "since": "text",
        "reason": "text", "times_out": "int", "consecutive_misses": "int", "version": "int",
    },
    indexes=(("store_id", "status"),),
)


def min_effective_price(offers: list[dict[str, Any]]) -> tuple[str | None, str | None]:
    """The lowest price a shopper pays (special when there is one), with its own currency."""
    priced = [(Decimal(o["special_price"] or o["price"]), o.get("currency") or "") for o in offers
              if (o.get("special_price") or o.get("price")) is not None]
    if not priced:
        return None, None
    price, currency = min(priced)
    return str(price), currency or None


@dataclass
class CurrentProductsProjection(Projection):
    name: str = field(default="current_products", init=False)
    tables: tuple[Table, ...] = field(default=(CURRENT_PRODUCTS,), init=False)

    def handlers(self) -> dict[str, Handler]:
        changes = {
            "Observed": _observed,
            "PriceChanged": lambda r, p: {"price_changes": int(r["price_changes"] or 0) + 1,
                                          "last_price_change_at": p["at"]},
            "DetailsChanged": lambda r, p: dict(p["fields"]),
            "Missed": lambda r, p: {"consecutive_misses": p["consecutive_misses"]},
            "WentOutOfStock": lambda r, p: {"in_stock": 0, "out_of_stock_since": p["at"]},
            "BackInStock": lambda r, p: {"in_stock": 1, "out_of_stock_since": None},
            "StockUnknown": lambda r, p: {"availability": "unknown"},
        }
        handlers: dict[str, Handler] = {
            f"Product.{k}": updater("current_products", v) for k, v in changes.items()
        }
        handlers["Product.Discovered"] = creator("current_products", _discovered)
        handlers[SIGHTED] = _sighted
        return handlers


def _sighted(env: Envelope, rows: Rows) -> None:
    """An unchanged sighting (`domain.sightings`): seen again, nothing else changed. It
    applies once, to a row no later than the product version it confirms (the row skips
    versions of events it ignores); a redelivered one is not later than the row's
    `last_seen_at`."""
    row = rows.get("current_products", env.stream_id)
    at = env.payload["observed_at"]
    if (row is None or int(row.get("version") or 0) > env.version
            or (row["last_seen_at"] or "") >= at):
        return
    row.update(last_seen_at=at, observations=int(row["observations"] or 0) + 1,
               last_job=env.payload["job_id"])
    rows.put("current_products", row)


def _discovered(env: Envelope) -> Row:
    p = env.payload
    return {
        "product_id": env.stream_id, "store_id": p["store_id"],
        "provider_product_id": p["provider_product_id"], "name": p["name"], "brand": p["brand"],
        "category": p["category"], "url": p["url"], "image_url": p["image_url"],
        "offers": "[]", "availability": "unknown", "in_stock": 1, "consecutive_misses": 0,
        "observations": 0, "price_changes": 0, "first_seen_at": p["at"],
        "last_job": p["job_id"],
    }


def _observed(row: dict[str, Any], p: dict[str, Any]) -> dict[str, Any]:
    offers = p["offers"]
    min_price, currency = min_effective_price(offers)
    return {
        "offers": dumps(offers), "min_price": min_price, "currency": currency,
        "availability": p["availability"], "quantity": p["quantity"],
        "last_seen_at": p["observed_at"], "consecutive_misses": 0,
        "observations": int(row["observations"] or 0) + 1, "last_job": p["job_id"],
    }


@dataclass
class StockStatusProjection(Projection):
    """Out-of-stock status per store and product, with since-when and why."""

    name: str = field(default="stock_status", init=False)
    tables: tuple[Table, ...] = field(default=(OUT_OF_STOCK,), init=False)

    def handlers(self) -> dict[str, Handler]:
        changes = {
            "Observed": lambda r, p: {"consecutive_misses": 0},
            "Missed": lambda r, p: {"consecutive_misses": p["consecutive_misses"]},
            "WentOutOfStock": lambda r, p: {"status": "out_of_stock", "since": p["at"],
                                            "reason": p["reason"],
                                            "times_out": int(r["times_out"] or 0) + 1},
            "BackInStock": lambda r, p: {"status": "in_stock", "since": p["at"],
                                         "reason": "seen again"},
            "StockUnknown": lambda r, p: {"status": "unknown", "since": p["at"],
                                          "reason": f"crawls failing: job {p['job_id']}"},
            "StockKnown": lambda r, p: {"status": "in_stock" if p["in_stock"] else "out_of_stock",
                                        "since": p["at"], "reason": "crawled again"},
        }
        handlers: dict[str, Handler] = {
            f"Product.{k}": updater("stock_status", v) for k, v in changes.items()
        }
        handlers["Product.Discovered"] = creator("stock_status", _stock_discovered)
        return handlers


def _stock_discovered(env: Envelope) -> Row:
    return {
        "product_id": env.stream_id, "store_id": env.payload["store_id"], "status": "in_stock",
        "since": env.payload["at"], "reason": "discovered", "times_out": 0,
        "consecutive_misses": 0,
    }
