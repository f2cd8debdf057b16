"""Sightings: one catalog crawl's unchanged observations, as columns, in one event.

Most observations of a recurring catalog crawl change nothing: the product is
listed again with the offers, availability and quantity it had. Recording each as a
`Product.Observed` event costs a stored row (~900 bytes with indexes) per product per
crawl. Instead, a sighting that changes nothing of its product (`Product.observe`
with `compact`) goes into the crawl's one `Sightings.Recorded` event: one stream per
crawl (its id derived from the job and the lease), its payload the observations as
columns. Everything `Product.Observed` said stays in it: the product, its stream
version at the time, the offers, availability, quantity and attributes, and the
crawl's job, attempt, time, content hash and extractor version.

`sighted(envelope)` turns the stored event back into one `Product.Sighted` envelope
per product, with exactly the payload a `Product.Observed` of that sighting would
have had: read models, the Parquet datasets and the relay (which publishes them on
the products topic, keyed by product id) consume those.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from uuid import UUID

from eventsourcing.domain import event

from domain import ids
from domain.aggregate import LedgerAggregate
from domain.envelope import Envelope

__all__ = ["RECORDED", "SIGHTED", "SightingColumns", "Sightings", "expand", "sighted"]

#: the stored event type, and the per-product envelopes it is read as
RECORDED = "Sightings.Recorded"
SIGHTED = "Product.Sighted"
#: an offer's fields in a column cell, in `Offer.to_payload`'s order
OFFER_FIELDS = ("option", "price", "currency", "special_price", "pricing_type",
                "availability", "quantity")


class Sightings(LedgerAggregate):
    """The unchanged observations of one catalog crawl (one event, never changed)."""

    @staticmethod
    def create_id(job_id: str, lease_id: str, **_: Any) -> UUID:
        return ids.uuid5(ids.NAMESPACE, f"sightings:{job_id}:{lease_id}")

    @event("Recorded")
    def __init__(self, job_id: str, lease_id: str, attempt: int, observed_at: datetime,
                 content_hash: str, extractor_version: str, products: list[str],
                 versions: list[int], offers: list[list[list[Any]]], availability: list[str],
                 quantity: list[int | None], attributes: list[dict[str, Any]]) -> None:
        self.job_id = job_id
        self.count = len(products)


@dataclass
class SightingColumns:
    """A crawl's unchanged observations gathered as columns while it is recorded."""

    products: list[str] = field(default_factory=list)
    versions: list[int] = field(default_factory=list)
    offers: list[list[list[Any]]] = field(default_factory=list)
    availability: list[str] = field(default_factory=list)
    quantity: list[int | None] = field(default_factory=list)
    attributes: list[dict[str, Any]] = field(default_factory=list)

    def add(self, product_id: str, version: int, offers: Sequence[dict[str, Any]],
            availability: str, quantity: int | None, attributes: dict[str, Any]) -> None:
        self.products.append(product_id)
        self.versions.append(version)
        self.offers.append([[_cell(o[f]) for f in OFFER_FIELDS] for o in offers])
        self.availability.append(availability)
        self.quantity.append(quantity)
        self.attributes.append(attributes)

    def record(self, job_id: str, lease_id: str, attempt: int, observed_at: datetime,
               content_hash: str, extractor_version: str) -> Sightings | None:
        """The crawl's `Sightings` (None when every observation changed something)."""
        if not self.products:
            return None
        return Sightings(job_id=job_id, lease_id=lease_id, attempt=attempt,
                         observed_at=observed_at, content_hash=content_hash,
                         extractor_version=extractor_version, products=self.products,
                         versions=self.versions, offers=self.offers,
                         availability=self.availability, quantity=self.quantity,
                         attributes=self.attributes)


def _cell(value: Any) -> Any:
    # money as its exact decimal text: what a stored Decimal reads back as in an envelope
    return value if value is None or isinstance(value, (str, int, bool)) else str(value)


def sighted(env: Envelope) -> list[Envelope]:
    """A `Sightings.Recorded` envelope as one `Product.Sighted` envelope per product:
    the product's stream and the version it confirms, the crawl's position and times,
    and the payload its `Product.Observed` would have had. Its event id is the stored
    event's id and the product id (stable, unique)."""
    p = env.payload
    common = {"job_id": p["job_id"], "attempt": p["attempt"], "observed_at": p["observed_at"]}
    out: list[Envelope] = []
    new = object.__new__
    for product, version, offers, availability, quantity, attributes in zip(
            p["products"], p["versions"], p["offers"], p["availability"], p["quantity"],
            p["attributes"], strict=True):
        payload = {**common, "offers": [dict(zip(OFFER_FIELDS, o, strict=True)) for o in offers],
                   "availability": availability, "quantity": quantity,
                   "attributes": attributes, "content_hash": p["content_hash"],
                   "extractor_version": p["extractor_version"]}
        one = new(Envelope)
        one.__dict__.update(
            event_id=f"{env.event_id}/{product}", position=env.position, stream_id=product,
            stream_type="Product", version=version, event_type=SIGHTED,
            schema_version=env.schema_version, occurred_at=env.occurred_at,
            recorded_at=env.recorded_at, payload=payload)
        if "ledger_id" in env.__dict__:  # set only in transport
            one.__dict__["ledger_id"] = env.ledger_id
        out.append(one)
    return out


def expand(envelopes: Iterable[Envelope]) -> Iterator[Envelope]:
    """The envelopes in order, each `Sightings.Recorded` replaced by its `sighted` ones."""
    for env in envelopes:
        if env.event_type == RECORDED:
            yield from sighted(env)
        else:
            yield env


def has_sightings(envelopes: Sequence[Envelope]) -> bool:
    return any(env.event_type == RECORDED for env in envelopes)
