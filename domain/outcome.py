"""How a crawl outcome becomes event data: the Succeeded payload, the observations to apply."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from domain.values import CrawlSuccess, Observation


def unique_observations(observations: Iterable[Observation]) -> dict[str, Observation]:
    seen: dict[str, Observation] = {}
    for obs in observations:
        seen.setdefault(obs.provider_product_id, obs)
    return seen


def outcome_payload(outcome: CrawlSuccess, chain_dropped: int = 0) -> dict[str, Any]:
    dropped = outcome.links_dropped + chain_dropped
    return {
        "http_status": outcome.http_status,
        "final_url": outcome.final_url,
        "pages": outcome.pages,
        "items": len(outcome.observations) + len(outcome.stores) + len(outcome.links),
        "bytes": outcome.bytes,
        "duration": round(outcome.duration, 6),
        "content_hash": outcome.content_hash,
        "raw_ref": outcome.raw_ref,
        "extractor": outcome.extractor,
        "extractor_version": outcome.extractor_version,
        "gone": outcome.gone,
        # links/stores left out by the fan-out caps (only when there were some)
        **({"dropped": dropped} if dropped else {}),
    }
