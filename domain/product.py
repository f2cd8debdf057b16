"""The Product aggregate: one product offered by one store.

Out-of-stock rule: a product absent from `MISSES_FOR_OUT_OF_STOCK`
consecutive *successful* crawls of its catalog goes out of stock; a failed
crawl never counts as a miss (it never reaches this aggregate); being seen
again resets the counter and, if it was out, brings it back in stock. A
store that itself says "out of stock" (`availability`) makes it go out at
once (`feed_says`), and so does its product page answering 404/410 (`gone`).
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from decimal import Decimal
from operator import attrgetter
from typing import Any
from uuid import UUID

from eventsourcing.domain import event

from domain import ids
from domain.aggregate import LedgerAggregate
from domain.snapshot_event import LedgerSnapshot
from domain.values import UNAVAILABLE, ImageFailure, ImageOutcome, Observation

MISSES_FOR_OUT_OF_STOCK = 3
#: failed crawls in a row of the job that sees a product before its stock is unknown
FAILURES_FOR_UNKNOWN_STOCK = 3
DETAIL_FIELDS = ("name", "brand", "category", "url", "image_url", "description")
#: the values of `DETAIL_FIELDS` of a product or an observation, in that order
_details = attrgetter(*DETAIL_FIELDS)


def offer_key(offer: dict[str, Any]) -> str:
    return f"{offer.get('pricing_type') or 'regular'}:{offer['option']}"


def _exact(offers: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Offers compared to the digit: Decimal("10.5") equals Decimal("10.50"), their
    stored text does not."""
    return [{k: str(v) if isinstance(v, Decimal) else v for k, v in o.items()} for o in offers]


class Product(LedgerAggregate):
    """A store's product; its id is derived from (store, provider product id)."""

    Snapshot = LedgerSnapshot
    #: False while the crawls that see it keep failing (class default: older snapshots)
    stock_known = True
    #: "content hash:extractor version" of every page re-extracted for it (backfill)
    reextractions: frozenset[str] = frozenset()
    #: what became of the image URL last tried: {"url", "status": "stored"|"failed", ...}
    #: (class default: products and snapshots from before images were fetched)
    image: dict[str, Any] | None = None
    #: (class default: products and snapshots from before descriptions were read)
    description: str | None = None
    #: the job of its latest `Observed` (class default: snapshots from before it was kept);
    #: only that job's sightings can be unchanged (`domain.sightings`)
    last_seen_by: str | None = None

    @staticmethod
    def create_id(store_id: str, provider_product_id: str, **_: Any) -> UUID:
        return ids.product_id(store_id, provider_product_id)

    @event("Discovered")
    def __init__(
        self,
        store_id: str,
        provider_product_id: str,
        name: str,
        brand: str | None,
        category: str | None,
        url: str | None,
        image_url: str | None,
        job_id: str,
        at: datetime,
        description: str | None = None,  # optional: Discovered events before it lack it
    ) -> None:
        self.store_id = store_id
        self.provider_product_id = provider_product_id
        self.name = name
        self.brand = brand
        self.category = category
        self.url = url
        self.image_url = image_url
        self.description = description
        self.discovered_by = job_id
        self.first_seen_at = at
        self.last_seen_at: datetime | None = None
        self.offers: dict[str, dict[str, Any]] = {}
        self.availability = "unknown"
        self.quantity: int | None = None
        self.in_stock = True
        self.out_of_stock_since: datetime | None = None
        self.consecutive_misses = 0
        self.observations = 0

    @classmethod
    def discover(cls, store_id: str, obs: Observation, job_id: str, at: datetime) -> Product:
        return cls(
            store_id=store_id,
            provider_product_id=obs.provider_product_id,
            name=obs.name,
            brand=obs.brand,
            category=obs.category,
            url=obs.url,
            image_url=obs.image_url,
            description=obs.description,
            job_id=job_id,
            at=at,
        )

    # commands ---------------------------------------------------------------
    def observe(self, obs: Observation, job_id: str, attempt: int, content_hash: str,
                extractor_version: str, at: datetime, compact: bool = False
                ) -> list[dict[str, Any]] | None:
        """Record one crawl's sighting and every change it implies.

        With `compact`, a sighting that would change nothing but the time it was last
        seen records no event: its offers are returned for the crawl's `Sightings`
        (`domain.sightings`). Else (or when something changed) None."""
        offers = [o.to_payload() for o in obs.offers]
        if compact and self._unchanged(obs, offers, job_id):
            return offers
        self._record_detail_changes(obs, job_id, at)
        self._record_price_changes(offers, job_id, at)
        self._observed(job_id, attempt, at, offers, obs.availability, obs.quantity,
                       dict(obs.attributes), content_hash, extractor_version)
        says_out = obs.availability in UNAVAILABLE
        if says_out and self.in_stock:
            self._went_out_of_stock("feed_says", job_id, at)
        elif not says_out and not self.in_stock:
            self._back_in_stock(job_id, at)
        if not self.stock_known:
            self._stock_known(job_id, obs.availability, self.in_stock, at)
        return None

    def _unchanged(self, obs: Observation, offers: list[dict[str, Any]], job_id: str) -> bool:
        """True when `observe` would record only an `Observed` repeating the state, seen
        by the job that saw it last: in stock, stock known, no misses, the same offers
        (to the digit), availability, quantity and details. (Another job's sighting is
        recorded per product, so a product's unchanged sightings between two of its
        events are all the crawls of one job: `runtime.sighting_count` counts them.)"""
        return (self.last_seen_by == job_id and self.in_stock and self.stock_known
                and not self.consecutive_misses and obs.availability == self.availability
                and obs.availability not in UNAVAILABLE and obs.quantity == self.quantity
                and _exact(offers) == _exact(self.offers.values())
                and not self._detail_changes(obs))

    def lose_sight(self, job_id: str, consecutive_failures: int, last_error: str | None,
                   at: datetime) -> None:
        """The job that sees it keeps failing: its stock is unknown until a good crawl
        (the job and its failures are the evidence)."""
        if self.stock_known:
            self._stock_unknown(job_id, consecutive_failures, last_error, at)

    def gone(self, job_id: str, at: datetime) -> None:
        """Its own page says it is no longer offered (404/410)."""
        if self.in_stock:
            self._went_out_of_stock("gone", job_id, at)

    def miss(self, job_id: str, at: datetime) -> None:
        """Absent from a successful crawl of its catalog."""
        if not self.in_stock:
            return  # already out: further absences change nothing
        misses = self.consecutive_misses + 1
        self._missed(job_id, misses, at)
        if misses >= MISSES_FOR_OUT_OF_STOCK:
            self._went_out_of_stock("misses", job_id, at)

    def _record_detail_changes(self, obs: Observation, job_id: str, at: datetime) -> None:
        changed = self._detail_changes(obs)
        if changed:
            self._details_changed(changed, job_id, at)

    def _detail_changes(self, obs: Observation) -> dict[str, Any]:
        seen, held = _details(obs), _details(self)
        if seen == held:  # most sightings change none of them
            return {}
        return {name: value for name, value, old in zip(DETAIL_FIELDS, seen, held, strict=True)
                if value is not None and value != old}

    def _record_price_changes(self, offers: list[dict[str, Any]], job_id: str,
                              at: datetime) -> None:
        for offer in offers:
            old = self.offers.get(offer_key(offer))
            if old is None or offer["price"] is None and offer["special_price"] is None:
                continue
            if (old["price"], old["special_price"]) != (offer["price"], offer["special_price"]):
                self._price_changed(
                    offer["option"], offer["pricing_type"], old["price"], offer["price"],
                    old["special_price"], offer["special_price"],
                    offer["currency"] or old["currency"], job_id, at,
                )

    def reextract(self, obs: Observation, job_id: str, content_hash: str, raw_ref: str | None,
                  extractor_version: str, observed_at: datetime, at: datetime) -> bool:
        """Record what the current extractor reads on an archived page (a backfill);
        once per page and extractor version. The product's current state is kept:
        this corrects the history of that page, it is not a new sighting."""
        if f"{content_hash}:{extractor_version}" in self.reextractions:
            return False
        self._reextracted(job_id, content_hash, raw_ref, extractor_version, observed_at,
                          [o.to_payload() for o in obs.offers], obs.availability,
                          dict(obs.attributes), at)
        return True

    def image_pending(self) -> bool:
        """True while its current image URL has not been tried (once per URL change)."""
        return bool(self.image_url) and (self.image is None or self.image.get("url") != self.image_url)

    def record_image(self, outcome: ImageOutcome, at: datetime) -> bool:
        """Record what downloading its current image URL gave; False (nothing recorded)
        when that URL was tried already or is no longer its image URL."""
        if outcome.url != self.image_url or not self.image_pending():
            return False
        if isinstance(outcome, ImageFailure):
            self._image_failed(outcome.url, outcome.kind, outcome.reason[:500], at)
        else:
            self._image_stored(outcome.url, outcome.sha256, outcome.width, outcome.height,
                               outcome.format, outcome.bytes, at)
        return True

    # events ---------------------------------------------------------------
    @event("ImageStored")
    def _image_stored(self, url: str, sha256: str, width: int, height: int, format: str,
                      bytes: int, at: datetime) -> None:
        self.image = {"url": url, "status": "stored", "sha256": sha256}

    @event("ImageFailed")
    def _image_failed(self, url: str, kind: str, reason: str, at: datetime) -> None:
        self.image = {"url": url, "status": "failed", "kind": kind}

    @event("Reextracted")
    def _reextracted(self, job_id: str, content_hash: str, raw_ref: str | None,
                     extractor_version: str, observed_at: datetime,
                     offers: list[dict[str, Any]], availability: str,
                     attributes: dict[str, Any], at: datetime) -> None:
        self.reextractions = self.reextractions | {f"{content_hash}:{extractor_version}"}

    @event("Observed")
    def _observed(self, job_id: str, attempt: int, observed_at: datetime,
                  offers: list[dict[str, Any]], availability: str, quantity: int | None,
                  attributes: dict[str, Any], content_hash: str,
                  extractor_version: str) -> None:
        self.offers = {offer_key(o): dict(o) for o in offers}
        self.availability = availability
        self.quantity = quantity
        self.last_seen_at = observed_at
        self.last_seen_by = job_id
        self.consecutive_misses = 0
        self.observations += 1

    @event("PriceChanged")
    def _price_changed(self, option: str, pricing_type: str, old: Any, new: Any,
                       old_special: Any, new_special: Any, currency: str | None,
                       job_id: str, at: datetime) -> None:
        pass  # the new offers are assigned by the Observed event that follows

    @event("DetailsChanged")
    def _details_changed(self, fields: dict[str, Any], job_id: str, at: datetime) -> None:
        for name, value in fields.items():
            setattr(self, name, value)
        if "image_url" in fields:
            self.image = None  # a new image URL is tried again, even one tried before

    @event("Missed")
    def _missed(self, job_id: str, consecutive_misses: int, at: datetime) -> None:
        self.consecutive_misses = consecutive_misses

    @event("WentOutOfStock")
    def _went_out_of_stock(self, reason: str, job_id: str, at: datetime) -> None:
        self.in_stock = False
        self.out_of_stock_since = at

    @event("StockUnknown")
    def _stock_unknown(self, job_id: str, consecutive_failures: int, last_error: str | None,
                       at: datetime) -> None:
        self.stock_known = False
        self.availability = "unknown"

    @event("StockKnown")
    def _stock_known(self, job_id: str, availability: str, in_stock: bool, at: datetime) -> None:
        self.stock_known = True

    @event("BackInStock")
    def _back_in_stock(self, job_id: str, at: datetime) -> None:
        self.in_stock = True
        self.out_of_stock_since = None
