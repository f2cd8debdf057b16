"""Worker heartbeats: in-flight count, memory and CPU, kept in place (not events).

Registration and departure are events (`CrawlLedger.register_worker` /
`depart_worker`); a heartbeat every `INTERVAL` seconds only updates the worker's row
in the side table `worker_heartbeats`, so heartbeats never grow the log. Which API
token may speak for a bot worker's name is kept beside it (`ledger.tables.worker_owners`).
A worker whose last heartbeat is older than three intervals is shown stale.
"""

from __future__ import annotations

import json
import os
import resource
import socket
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the crawl process reads `process_stats` without the ledger's modules
    from runtime.ledger import Ledger
    from runtime.tables import HeartbeatTable


__all__ = ["INTERVAL", "Heartbeats", "process_stats", "register", "registry"]

#: seconds between heartbeats; three missed ones make a worker stale
INTERVAL = 10.0
VERSION = "0.1"


class Heartbeats:
    """A worker's heartbeat: its row in the side table `worker_heartbeats`."""

    def __init__(self, table: HeartbeatTable) -> None:
        self.table = table

    def beat(self, name: str, in_flight: int, now: datetime,
             helpers: tuple[int, float] = (0, 0.0)) -> None:
        """The worker's row: this process's memory and CPU plus `helpers`', the (peak
        resident bytes, CPU seconds) of processes working for it (a runner's crawl
        process)."""
        rss, cpu = process_stats()
        self.table.put(name, now, in_flight, rss + helpers[0], round(cpu + helpers[1], 3))

    def latest(self) -> dict[str, dict[str, Any]]:
        return self.table.latest()


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
