"""Extraction health: per store, the share of products its recent crawls read badly.

Over a store's last `WINDOW` successful crawls that saw products, the share of the
products seen with no price at all (`no_price_ratio`), with a low-confidence price
(read from the visible text alone: `low_confidence_ratio`), and both together
(`misses_ratio`). The counts come from the `extraction` part of each
`CrawlJob.Succeeded` outcome (`domain.outcome.extraction_counts`); outcomes recorded
before it carry none and are left out.

A job's store comes from its `Scheduled` event (`extraction_jobs`); the job row's
stream version makes a redelivered `Succeeded` change nothing.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from typing import Any

from domain.envelope import Envelope
from projections.framework import Handler, Projection, Rows, Table, dumps, loads

#: how many of a store's recent crawls (with products) the ratios cover
WINDOW = 50

EXTRACTION_JOBS = Table(
    name="extraction_jobs",
    key=("job_id",),
    columns={"job_id": "text", "store_id": "text", "version": "int"},
)

STORE_EXTRACTION = Table(
    name="store_extraction",
    key=("store_id",),
    columns={
        "store_id": "text", "crawls": "int", "products": "int", "no_price": "int",
        "low_confidence": "int", "no_price_ratio": "real", "low_confidence_ratio": "real",
        "misses_ratio": "real", "last_crawl_at": "text",
        # the window: [[at, job_id, version, products, no_price, low_confidence], ...],
        # oldest first
        "recent": "json",
    },
)


@dataclass
class ExtractionHealthProjection(Projection):
    name: str = field(default="extraction_health", init=False)
    tables: tuple[Table, ...] = field(default=(EXTRACTION_JOBS, STORE_EXTRACTION), init=False)

    def handlers(self) -> dict[str, Handler]:
        return {"CrawlJob.Scheduled": _scheduled, "CrawlJob.Succeeded": _succeeded}


def _scheduled(env: Envelope, rows: Rows) -> None:
    store_id = env.payload.get("store_id")
    if store_id and rows.get("extraction_jobs", env.stream_id) is None:
        rows.put("extraction_jobs", {"job_id": env.stream_id, "store_id": store_id,
                                     "version": env.version})


def _succeeded(env: Envelope, rows: Rows) -> None:
    job = rows.get("extraction_jobs", env.stream_id)
    if job is None or int(job["version"]) >= env.version:
        return
    job["version"] = env.version
    rows.put("extraction_jobs", job)
    counts = (env.payload.get("outcome") or {}).get("extraction")
    if not counts or not counts.get("products"):
        return
    store = rows.get("store_extraction", job["store_id"]) or {"store_id": job["store_id"]}
    # the window is the store's latest crawls by (time, job, version), whatever order
    # they are applied in (a distributed projector sees a store's jobs on several
    # partitions): keeping the largest keys at each step keeps the largest overall.
    # It is stored sorted, so each crawl is inserted in its place; the decoded window
    # stays with the batch's row (`_WINDOW`, not a column) for the store's next crawl
    recent: list[list[Any]] | None = store.get(_WINDOW)
    if recent is None:
        recent = store[_WINDOW] = sorted(loads(store.get("recent")) or [])
    bisect.insort(recent, [str(env.payload.get("at") or env.occurred_at), env.stream_id,
                           env.version, int(counts["products"]), int(counts["no_price"]),
                           int(counts["low_confidence"])])
    del recent[:-WINDOW]
    store.update(_figures(recent), recent=dumps(recent), last_crawl_at=recent[-1][0])
    rows.put("store_extraction", store)


#: the key of a batch's store row holding its window decoded (never written: not a column)
_WINDOW = "_window"


def _figures(recent: list[list[Any]]) -> dict[str, Any]:
    columns = list(zip(*recent))
    products = sum(map(int, columns[3]))
    no_price = sum(map(int, columns[4]))
    low = sum(map(int, columns[5]))
    return {"crawls": len(recent), "products": products, "no_price": no_price,
            "low_confidence": low, "no_price_ratio": _share(no_price, products),
            "low_confidence_ratio": _share(low, products),
            "misses_ratio": _share(no_price + low, products)}


def _share(part: int, whole: int) -> float:
    return round(part / whole, 4) if whole else 0.0

