"""Workers: one row per registered worker process (from `Worker` events)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from domain.envelope import Envelope
from projections.db import Row
from projections.framework import Handler, Projection, Table, creator, updater

WORKERS = Table(
    name="workers",
    key=("worker_id",),
    columns={
        "worker_id": "text", "name": "text", "driver": "text", "host": "text", "pid": "int",
        "release": "text", "concurrency": "int", "kinds": "text", "started_at": "text",
        "departed_at": "text", "departure": "text", "version": "int",
    },
)


@dataclass
class WorkersProjection(Projection):
    name: str = field(default="workers", init=False)
    tables: tuple[Table, ...] = field(default=(WORKERS,), init=False)

    def handlers(self) -> dict[str, Handler]:
        return {
            "Worker.Registered": creator("workers", _registered),
            "Worker.Rejoined": updater("workers", lambda r, p: {
                "driver": p["driver"], "host": p["host"], "pid": p["pid"],
                "release": p["version"], "concurrency": p["concurrency"],
                "kinds": json.dumps(p["kinds"]), "started_at": p["at"], "departed_at": None,
                "departure": None}),
            "Worker.Departed": updater("workers", lambda r, p: {
                "departed_at": p["at"], "departure": p["reason"]}),
        }


def _registered(env: Envelope) -> Row:
    p = env.payload
    return {"worker_id": env.stream_id, "name": p["name"], "driver": p["driver"],
            "host": p["host"], "pid": p["pid"], "release": p["version"],
            "concurrency": p["concurrency"], "kinds": json.dumps(p["kinds"]),
            "started_at": p["at"]}
