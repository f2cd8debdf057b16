"""Read models built from the ledger's events (see `framework` for the rules)."""

from __future__ import annotations

from projections.alert_subscriptions import AlertsProjection
from projections.changes import ProductChangesProjection
from projections.extraction_health import ExtractionHealthProjection
from projections.framework import Projection
from projections.job_status import JobStatusProjection
from projections.product_images import ProductImagesProjection
from projections.product_search import ProductSearchProjection
from projections.products import CurrentProductsProjection, StockStatusProjection
from projections.proxy_status import ProxiesProjection
from projections.stores import StoresProjection
from projections.workers import WorkersProjection


def read_models(prefix: str = "") -> list[Projection]:
    """The core read models, with table names under `prefix` (scratch rebuilds)."""
    return [
        StoresProjection(prefix=prefix),
        JobStatusProjection(prefix=prefix),
        CurrentProductsProjection(prefix=prefix),
        StockStatusProjection(prefix=prefix),
        ProductSearchProjection(prefix=prefix),
        WorkersProjection(prefix=prefix),
        ProductImagesProjection(prefix=prefix),
        AlertsProjection(prefix=prefix),
        ProxiesProjection(prefix=prefix),
        ExtractionHealthProjection(prefix=prefix),
        ProductChangesProjection(prefix=prefix),
    ]


__all__ = ["Projection", "read_models"]
