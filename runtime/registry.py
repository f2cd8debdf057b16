"""Worker heartbeats: in-flight count, memory and CPU, kept in place (not events).

Registration and departure are events (`CrawlLedger.register_worker` /
`depart_worker`); a heartbeat every `INTERVAL` seconds only updates the worker's row
in `worker_heartbeats` (the read-model database), so heartbeats never grow the log.
A worker whose last heartbeat is older than three intervals is shown stale.
"""

from __future__ import annotations

import json
import os
import resource
import socket
from datetime import datetime, timedelta
from typing import Any

from domain.timeutil import iso
from projections.db import Database
from runtime.ledger import Ledger

__all__ = ["INTERVAL", "Heartbeats", "WorkerOwners", "process_stats", "register", "registry"]

#: seconds between heartbeats; three missed ones make a worker stale
INTERVAL = 10.0
TABLE = "worker_heartbeats"
OWNERS = "worker_owners"
VERSION = "0.1"


class Heartbeats:
    def __init__(self, db: Database) -> None:
        self.db = db
        with db.transaction() as tx:
            tx.execute(f"CREATE TABLE IF NOT EXISTS {TABLE} (name TEXT PRIMARY KEY, at TEXT NOT "
                       "NULL, in_flight INTEGER, rss_bytes INTEGER, cpu_seconds REAL)")

    def beat(self, name: str, in_flight: int, now: datetime,
             helpers: tuple[int, float] = (0, 0.0)) -> None:
        """The worker's row: this process's memory and CPU plus `helpers`', the (peak
        resident bytes, CPU seconds) of processes working for it (a runner's crawl
        process)."""
        rss, cpu = process_stats()
        rss, cpu = rss + helpers[0], round(cpu + helpers[1], 3)
        with self.db.transaction() as tx:
            tx.execute(f"DELETE FROM {TABLE} WHERE name = ?", (name,))
            tx.execute(f"INSERT INTO {TABLE} (name, at, in_flight, rss_bytes, cpu_seconds) "
                       "VALUES (?, ?, ?, ?, ?)", (name, iso(now), in_flight, rss, cpu))

    def latest(self) -> dict[str, dict[str, Any]]:
        return {row["name"]: row for row in self.db.query(f"SELECT * FROM {TABLE}")}


class WorkerOwners:
    """Which API token each bot worker name belongs to: the first token to lease as a
    name owns it, and only that token may act for it (lease, depart) afterwards. Kept
    beside the heartbeats: it says who may speak for a worker, not what it did."""

    def __init__(self, db: Database) -> None:
        self.db = db
        with db.transaction() as tx:
            tx.execute(f"CREATE TABLE IF NOT EXISTS {OWNERS} (name TEXT PRIMARY KEY, "
                       "token_id TEXT NOT NULL)")

    def claim(self, name: str, token_id: str) -> bool:
        """Whether `name` is `token_id`'s, claiming it when no token has it yet."""
        with self.db.transaction() as tx:
            tx.execute(f"INSERT INTO {OWNERS} (name, token_id) VALUES (?, ?) "
                       "ON CONFLICT (name) DO NOTHING", (name, token_id))
            rows = tx.execute(f"SELECT token_id FROM {OWNERS} WHERE name = ?", (name,))
        return bool(rows) and rows[0]["token_id"] == token_id

    def owns(self, name: str, token_id: str) -> bool:
        """Whether `name` is `token_id`'s (a name no token has claimed is nobody's)."""
        with self.db.transaction() as tx:
            rows = tx.execute(f"SELECT token_id FROM {OWNERS} WHERE name = ?", (name,))
        return bool(rows) and rows[0]["token_id"] == token_id


def process_stats() -> tuple[int, float]:
    """(resident memory in bytes at its peak, CPU seconds used) of this process."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_maxrss * 1024, round(usage.ru_utime + usage.ru_stime, 3)


def register(ledger: Ledger, name: str, driver: str, concurrency: int, kinds: list[str],
             now: datetime, host: str | None = None, pid: int | None = None) -> None:
    """Register a worker (this process unless `host`/`pid` say another: a bot's)."""
    ledger.app.register_worker(name=name, driver=driver, host=host or socket.gethostname(),
                               pid=os.getpid() if pid is None else pid, version=VERSION,
                               concurrency=concurrency, kinds=kinds, now=now)


def registry(ledger: Ledger, heartbeats: Heartbeats, now: datetime) -> list[dict[str, Any]]:
    """Every registered worker with its last heartbeat and whether it is stale (from the
    workers read model as it is: the caller catches it up if it must be current)."""
    beats = heartbeats.latest()
    found = []
    for row in ledger.read.workers():
        beat = beats.get(row["name"])
        last = beat["at"] if beat else row["started_at"]
        stale = row["departed_at"] is None and (
            now - datetime.fromisoformat(str(last).replace("Z", "+00:00"))
            > timedelta(seconds=3 * INTERVAL))
        kinds = row.get("kinds")
        found.append({**row, "kinds": json.loads(kinds) if isinstance(kinds, str) else kinds,
                      "heartbeat": beat, "stale": stale,
                      "state": "departed" if row["departed_at"] else
                      "stale" if stale else "alive"})
    return found
