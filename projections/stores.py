"""Stores: one row per store with its platform, policy and state."""

from __future__ import annotations

from dataclasses import dataclass, field

from domain.envelope import Envelope
from domain.values import Policy
from projections.db import Row
from projections.framework import Handler, Projection, Table, creator, updater

DEFAULT = Policy()  # a store without PolicyChanged has the default policy

STORES = Table(
    name="stores",
    key=("store_id",),
    columns={
        "store_id": "text", "name": "text", "base_url": "text", "platform": "text",
        "region": "text", "timezone": "text", "enabled": "int", "disabled_reason": "text",
        "crawl_delay": "real", "max_concurrency": "int", "respect_robots": "int",
        "user_agent": "text", "platform_store_id": "text", "discovered_by": "text",
        "registered_at": "text", "version": "int",
    },
)


@dataclass
class StoresProjection(Projection):
    name: str = field(default="stores", init=False)
    tables: tuple[Table, ...] = field(default=(STORES,), init=False)

    def handlers(self) -> dict[str, Handler]:
        changes = {
            "PolicyChanged": lambda r, p: {
                "crawl_delay": p["crawl_delay"], "max_concurrency": p["max_concurrency"],
                "respect_robots": int(p["respect_robots"]), "user_agent": p["user_agent"]},
            "Discovered": lambda r, p: {"discovered_by": p["by_job"]},
            "EntryPointResolved": lambda r, p: {"platform_store_id": p["platform_store_id"]},
            "Enabled": lambda r, p: {"enabled": 1, "disabled_reason": None},
            "Disabled": lambda r, p: {"enabled": 0, "disabled_reason": p["reason"]},
        }
        handlers = {f"Store.{k}": updater("stores", v) for k, v in changes.items()}
        handlers["Store.Registered"] = creator("stores", _registered)
        return handlers


def _registered(env: Envelope) -> Row:
    p = env.payload
    return {
        "store_id": env.stream_id, "name": p["name"], "base_url": p["base_url"],
        "platform": p["platform"], "region": p["region"], "timezone": p["timezone"],
        "enabled": 1, "crawl_delay": DEFAULT.crawl_delay,
        "max_concurrency": DEFAULT.max_concurrency, "respect_robots": int(DEFAULT.respect_robots),
        "registered_at": p["registered_at"],
    }

