"""Egress proxies: one row per proxy (from `Proxy` events) with its state.

The per-request health counters (successes, failures, latency) are not events;
they live beside the log (`runtime.proxy_pool`), and `ProxyQueries.pool` joins
them in. This table is rebuildable like every read model.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from domain.envelope import Envelope
from projections.db import Database, Row
from projections.framework import Handler, Projection, Table, creator, updater

__all__ = ["PROXIES", "ProxiesProjection", "ProxyQueries"]

PROXIES = Table(
    name="proxies",
    key=("proxy_id",),
    columns={
        "proxy_id": "text", "address": "text", "region": "text", "enabled": "int",
        "disabled_reason": "text", "healthy": "int", "retest_at": "text",
        "last_error": "text", "health_changes": "int", "added_at": "text",
        "changed_at": "text", "version": "int",
    },
)


@dataclass
class ProxiesProjection(Projection):
    name: str = field(default="proxies", init=False)
    tables: tuple[Table, ...] = field(default=(PROXIES,), init=False)

    def handlers(self) -> dict[str, Handler]:
        changes = {
            "Disabled": lambda r, p: {"enabled": 0, "disabled_reason": p["reason"]},
            "Enabled": lambda r, p: {"enabled": 1, "disabled_reason": None},
            "Deactivated": lambda r, p: _health(r, p, healthy=0, retest_at=p["retest_at"],
                                                last_error=p["error"]),
            "Reactivated": lambda r, p: _health(r, p, healthy=1, retest_at=None),
            "RetestFailed": lambda r, p: _health(r, p, healthy=0, retest_at=p["retest_at"],
                                                 last_error=p["error"]),
        }
        handlers = {f"Proxy.{k}": updater(PROXIES.name, v) for k, v in changes.items()}
        handlers["Proxy.Added"] = creator(PROXIES.name, _added)
        return handlers


def _health(row: Row, payload: dict[str, Any], **change: Any) -> Row:
    return {**change, "health_changes": int(row.get("health_changes") or 0) + 1,
            "changed_at": payload["at"]}


def _added(env: Envelope) -> Row:
    p = env.payload
    return {"proxy_id": env.stream_id, "address": p["address"], "region": p["region"],
            "enabled": 1, "healthy": 1, "health_changes": 0, "added_at": p["at"],
            "changed_at": p["at"]}


class ProxyQueries:
    """Reads of the proxies read model."""

    def __init__(self, db: Database) -> None:
        self.db = db
        ProxiesProjection().create(db)

    def proxies(self) -> list[dict[str, Any]]:
        return [dict(r) for r in self.db.query(
            f"SELECT * FROM {PROXIES.name} ORDER BY added_at, address")]

    def proxy(self, proxy_id: str) -> dict[str, Any] | None:
        rows = self.db.query(f"SELECT * FROM {PROXIES.name} WHERE proxy_id = ?", (proxy_id,))
        return dict(rows[0]) if rows else None
