"""An aggregate as the ledger knew it at a recorded time, with the events it knew
(`runtime.history`): `?as_of=` on `GET /api/v1/products/{id}` and `GET /api/v1/jobs/{id}`,
and the CLI's `products show --as-of` / `jobs show --as-of`.

The state is the aggregate replayed to its last event recorded at or before that time,
not a read-model row: read models hold only the present. Times are ISO 8601 strings.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from domain.envelope import Envelope
from domain.errors import NotFound
from domain.timeutil import iso
from domain.values import shown_in_stock
from runtime.history import known_at
from runtime.ledger import Ledger
from runtime.sighting_count import unchanged_sightings

__all__ = ["job_as_of", "product_as_of"]


#: the fields shown of each aggregate's state
_PRODUCT = ("store_id", "provider_product_id", "name", "brand", "category", "url", "image_url",
            "availability", "in_stock", "out_of_stock_since", "quantity", "observations",
            "consecutive_misses", "first_seen_at", "last_seen_at")
_JOB = ("kind", "url", "state", "attempt", "interval", "next_run_at", "priority", "store_id",
        "parent_job", "last_error")


def product_as_of(ledger: Ledger, product: Any, at: datetime) -> dict[str, Any]:
    """Its state and events at `at`; its observation count and last sighting include
    the unchanged sightings in its catalog crawls' `Sightings` (`runtime.sighting_count`)."""
    def more(found: Any, history: list[Envelope]) -> dict[str, Any]:
        count, last = unchanged_sightings(ledger, history, at)
        seen = [t for t in (found.last_seen_at, last) if t is not None]
        return {"offers": list(found.offers.values()), "observations": found.observations + count,
                "last_seen_at": _plain(max(seen)) if seen else None,
                "in_stock": shown_in_stock(found.in_stock, found.availability)}
    return _as_of(ledger, product, at, _PRODUCT, more)


def job_as_of(ledger: Ledger, job: Any, at: datetime) -> dict[str, Any]:
    return _as_of(ledger, job, at, _JOB,
                  lambda found, _: {"max_attempts": found.policy.max_attempts})


def _as_of(ledger: Ledger, aggregate: Any, at: datetime, fields: tuple[str, ...],
           more: Callable[[Any, list[Envelope]], dict[str, Any]]) -> dict[str, Any]:
    known = known_at(ledger, aggregate, at)
    if known is None:
        raise NotFound(f"{aggregate.id} was not yet recorded at {at.isoformat()}")
    found, history = known
    state = {name: _plain(getattr(found, name, None)) for name in fields} | more(found, history)
    return {"id": str(found.id), "as_of": at.isoformat(), "version": found.version,
            "state": state, "events": [e.to_dict() for e in history]}


def _plain(value: Any) -> Any:
    return iso(value) if isinstance(value, datetime) else value
