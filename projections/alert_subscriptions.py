"""Alerts: one row per subscription and one per delivery (from `Subscription` and
`Delivery` events), and the queries the alert handler and the CLI/API ask them."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from domain.envelope import Envelope
from projections.db import Database, Row
from projections.framework import Handler, Projection, Table, creator, updater

__all__ = ["AlertsProjection", "AlertQueries"]

SUBSCRIPTIONS = Table(
    name="alert_subscriptions",
    key=("subscription_id",),
    columns={
        "subscription_id": "text", "name": "text", "target_kind": "text", "target": "text",
        "triggers": "json", "channel_kind": "text", "channel": "text", "created_at": "text",
        "removed_at": "text", "version": "int",
    },
)
DELIVERIES = Table(
    name="alert_deliveries",
    key=("delivery_id",),
    columns={
        "delivery_id": "text", "subscription_id": "text", "event_id": "text",
        "event_type": "text", "product_id": "text", "trigger": "json", "state": "text",
        "attempts": "int", "next_at": "text", "attempt_until": "text", "last_status": "int",
        "last_error": "text", "created_at": "text", "finished_at": "text", "position": "int",
        "version": "int",
    },
    indexes=(("state", "next_at"), ("subscription_id",)),
)


@dataclass
class AlertsProjection(Projection):
    name: str = field(default="alerts", init=False)
    tables: tuple[Table, ...] = field(default=(SUBSCRIPTIONS, DELIVERIES), init=False)

    def handlers(self) -> dict[str, Handler]:
        subs, dels = SUBSCRIPTIONS.name, DELIVERIES.name
        return {
            "Subscription.Created": creator(subs, _created),
            "Subscription.Removed": updater(subs, lambda r, p: {"removed_at": p["at"]}),
            "Delivery.Triggered": creator(dels, _triggered),
            "Delivery.Attempted": updater(dels, lambda r, p: {
                "state": "attempting", "attempts": p["attempt"], "attempt_until": p["until"]}),
            "Delivery.Delivered": updater(dels, lambda r, p: {
                "state": "delivered", "last_status": p["status"], "last_error": None,
                "attempt_until": None, "finished_at": p["at"]}),
            "Delivery.Failed": updater(dels, lambda r, p: {
                "state": "failed", "last_status": p["status"], "last_error": p["error"],
                "attempt_until": None, "next_at": p["retry_at"] or r["next_at"]}),
            "Delivery.Dead": updater(dels, lambda r, p: {"state": "dead",
                                                          "finished_at": p["at"]}),
        }


def _created(env: Envelope) -> Row:
    p = env.payload
    return {"subscription_id": env.stream_id, "name": p["name"],
            "target_kind": p["target_kind"], "target": p["target"],
            "triggers": json.dumps(p["triggers"]), "channel_kind": p["channel_kind"],
            "channel": p["channel"], "created_at": p["at"], "removed_at": None}


def _triggered(env: Envelope) -> Row:
    p = env.payload
    return {"delivery_id": env.stream_id, "subscription_id": p["subscription_id"],
            "event_id": p["event_id"], "event_type": p["event_type"],
            "product_id": p["product_id"], "trigger": json.dumps(p["trigger"]),
            "state": "pending", "attempts": 0, "next_at": p["at"], "created_at": p["at"],
            "position": env.position}


def _subscription(row: Row) -> dict[str, Any]:
    return {**row, "triggers": json.loads(row["triggers"])}


def _delivery(row: Row) -> dict[str, Any]:
    return {**row, "trigger": json.loads(row["trigger"])}


class AlertQueries:
    """Reads of the alerts read model."""

    def __init__(self, db: Database) -> None:
        self.db = db
        AlertsProjection().create(db)

    def subscriptions(self, include_removed: bool = False) -> list[dict[str, Any]]:
        where = "" if include_removed else " WHERE removed_at IS NULL"
        rows = self.db.query(f"SELECT * FROM alert_subscriptions{where} "
                             "ORDER BY created_at, subscription_id")
        return [_subscription(r) for r in rows]

    def subscription(self, subscription_id: str) -> dict[str, Any] | None:
        rows = self.db.query("SELECT * FROM alert_subscriptions WHERE subscription_id = ?",
                             (subscription_id,))
        return _subscription(rows[0]) if rows else None

    def deliveries(self, subscription_id: str | None = None, state: str | None = None,
                   limit: int = 100) -> list[dict[str, Any]]:
        clauses, params = [], []
        for column, value in (("subscription_id", subscription_id), ("state", state)):
            if value is not None:
                clauses.append(f"{column} = ?")
                params.append(value)
        where = f" WHERE {' AND '.join(clauses)}" if clauses else ""
        rows = self.db.query(f"SELECT * FROM alert_deliveries{where} "
                             f"ORDER BY position DESC LIMIT ?", (*params, limit))
        return [_delivery(r) for r in rows]

    def due_deliveries(self, now: str, orphaned: bool = False, limit: int = 100) -> list[str]:
        """Deliveries an attempt may start for: pending or failed whose time has come,
        attempts in flight whose time ran out (or every one, when `orphaned`)."""
        rows = self.db.query(
            "SELECT delivery_id FROM alert_deliveries WHERE "
            "(state IN ('pending', 'failed') AND next_at <= ?) OR "
            "(state = 'attempting' AND (? OR attempt_until <= ?)) "
            "ORDER BY next_at, position LIMIT ?", (now, orphaned, now, limit))
        return [r["delivery_id"] for r in rows]
