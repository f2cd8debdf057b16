"""Re-extraction of archived pages (backfill) as commands: a mixin of `CrawlLedger`.

`record_reextraction` records, on the product the observation names, what the
current extractor reads on a page fetched earlier (`Product.Reextracted`, carrying
the page's content hash, its raw reference and the extractor version). A product
seen for the first time this way is discovered first. Recording the same page and
extractor version again records nothing, so a second backfill run is a no-op.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, TypeVar
from uuid import UUID

from eventsourcing.domain import Aggregate

from domain import ids
from domain.product import Product
from domain.timeutil import command, utc
from domain.values import Observation

__all__ = ["Reextraction"]

A = TypeVar("A", bound=Aggregate)


class Reextraction:
    if TYPE_CHECKING:  # provided by the application class this is mixed into
        def find(self, cls: type[A], aggregate_id: UUID) -> A | None: ...

        def _save(self, *aggregates: Aggregate | None) -> Sequence[int]: ...

    @command
    def record_reextraction(self, store_id: str, obs: Observation, job_id: str,
                            content_hash: str, raw_ref: str | None, extractor_version: str,
                            observed_at: datetime, now: datetime) -> bool:
        """True when recorded; False when this page and extractor version already were."""
        now = utc(now)
        product = self.find(Product, ids.product_id(store_id, obs.provider_product_id))
        if product is None:
            product = Product.discover(store_id, obs, job_id, now)
        recorded = product.reextract(obs, job_id, content_hash, raw_ref, extractor_version,
                                     utc(observed_at), now)
        if recorded:
            self._save(product)
        return recorded
