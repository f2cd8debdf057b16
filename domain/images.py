"""Product images as commands: a mixin of `CrawlLedger`.

A product's image URL (from extraction) is downloaded once per change of that URL:
`record_image` records the outcome on the product, `Product.ImageStored` (the
content hash the bytes are stored under, their size, dimensions and format) or
`Product.ImageFailed` (a kind and a reason). Recording again for a URL already
tried, or for a URL the product no longer has, records nothing, so two drivers
racing over the same product record one outcome.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, TypeVar
from uuid import UUID

from eventsourcing.domain import Aggregate

from domain.errors import Conflict
from domain.persistence import as_uuid
from domain.product import Product
from domain.timeutil import command, utc
from domain.values import ImageOutcome

__all__ = ["ProductImages"]

A = TypeVar("A", bound=Aggregate)
#: attempts of one recording when another writer saved the product meanwhile
RECORD_ATTEMPTS = 3


class ProductImages:
    if TYPE_CHECKING:  # provided by the application class this is mixed into
        def get_product(self, product_id: UUID | str) -> Product: ...

        def find_many(self, cls: type[A], aggregate_ids: Iterable[UUID]) -> dict[UUID, A]: ...

        def _save(self, *aggregates: Aggregate | None) -> Sequence[int]: ...

    def images_pending(self, wanted: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
        """The (product id, image URL) pairs whose URL is still the product's image and
        untried (the read model may lag behind the products: this asks them)."""
        pairs = list(wanted)
        products = self.find_many(Product, [as_uuid(p, "product") for p, _ in pairs])
        return [(p, url) for p, url in pairs
                if (found := products.get(as_uuid(p, "product"))) is not None
                and found.image_url == url and found.image_pending()]

    @command
    def record_image(self, product_id: UUID | str, outcome: ImageOutcome, now: datetime) -> bool:
        """True when recorded; False when the URL was tried already or is no longer the
        product's image URL."""
        for attempt in range(1, RECORD_ATTEMPTS + 1):
            product = self.get_product(product_id)
            if not product.record_image(outcome, utc(now)):
                return False
            try:
                self._save(product)
                return True
            except Conflict:
                if attempt == RECORD_ATTEMPTS:
                    raise
        raise AssertionError("unreachable")
