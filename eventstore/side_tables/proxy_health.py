"""Proxy URLs and health counters in the read-model database (`ProxyTable`)."""

from __future__ import annotations

from typing import Any

from eventstore.database import Database
from eventstore.side_tables.ports import Counters
from eventstore.side_tables.schema import PROXY_HEALTH, PROXY_URLS

__all__ = ["SqlProxies"]


class SqlProxies:
    def __init__(self, db: Database) -> None:
        self.db = db

    def put_url(self, proxy_id: str, url: str) -> None:
        with self.db.transaction() as tx:
            tx.execute(f"INSERT INTO {PROXY_URLS} (proxy_id, url) VALUES (?, ?) ON CONFLICT "
                       "(proxy_id) DO UPDATE SET url = excluded.url", (proxy_id, url))

    def urls(self) -> dict[str, str]:
        return {r["proxy_id"]: r["url"] for r in self.db.query(f"SELECT * FROM {PROXY_URLS}")}

    def save_health(self, rows: list[Counters]) -> None:
        with self.db.transaction() as tx:
            for row in rows:
                tx.execute(f"INSERT INTO {PROXY_HEALTH} (proxy_id, successes, failures, "
                           "consecutive_failures, latency) VALUES (?, ?, ?, ?, ?) ON CONFLICT "
                           "(proxy_id) DO UPDATE SET successes = excluded.successes, "
                           "failures = excluded.failures, consecutive_failures = "
                           "excluded.consecutive_failures, latency = excluded.latency", row)

    def health(self) -> dict[str, dict[str, Any]]:
        return {r["proxy_id"]: dict(r) for r in self.db.query(f"SELECT * FROM {PROXY_HEALTH}")}
