"""How a crawl outcome becomes event data: the Succeeded payload, the observations to apply.

The payload's optional `extraction` counts (products, those without a price, those whose
price is low-confidence) feed the stores' extraction health (`projections.extraction_health`);
outcomes recorded before it have none and are left out of that figure.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from domain.values import CrawlSuccess, Observation


def unique_observations(observations: Iterable[Observation]) -> dict[str, Observation]:
    seen: dict[str, Observation] = {}
    for obs in observations:
        seen.setdefault(obs.provider_product_id, obs)
    return seen


#: origins named in a result's `no_store` field (the count covers them all)
NO_STORE_ORIGINS = 5


def outcome_payload(outcome: CrawlSuccess, chain_dropped: int = 0,
                    unmatched: Mapping[str, int] | None = None) -> dict[str, Any]:
    """The `Succeeded.outcome` of a result; `unmatched`: feed links whose origin has no
    registered store, by origin (recorded as `no_store`, so they are not dropped unseen)."""
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
        **({"extraction": extraction_counts(outcome.observations)} if outcome.observations else {}),
        **({"no_store": _no_store(unmatched)} if unmatched else {}),
    }


def _no_store(unmatched: Mapping[str, int]) -> dict[str, Any]:
    return {"links": sum(unmatched.values()),
            "origins": sorted(unmatched)[:NO_STORE_ORIGINS]}


#: `workers.extraction.adapters.merge`'s price source for a price picked from the page's visible text
#: alone (no structured price to back it): the low-confidence one
VISIBLE_ONLY_PRICE = "visible"


def extraction_counts(observations: Iterable[Observation]) -> dict[str, int]:
    """Products seen, those with no price at all, and those whose price is low-confidence."""
    unique = unique_observations(observations).values()
    return {
        "products": len(unique),
        "no_price": sum(1 for obs in unique if not has_price(obs)),
        "low_confidence": sum(1 for obs in unique if has_price(obs) and low_confidence(obs)),
    }


def has_price(obs: Observation) -> bool:
    return any(o.price is not None or o.special_price is not None for o in obs.offers)


def low_confidence(obs: Observation) -> bool:
    """The price was read from the page's visible text only (ranking rule 4)."""
    return obs.attributes.get("source.price") == VISIBLE_ONLY_PRICE
