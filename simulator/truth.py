"""Ground truth: what each store offered at an epoch, every request served, every fault.

`TruthLog` is thread-safe: the server records from its event-loop thread while
tests read from theirs. Documents are JSON-ready (prices as decimal strings).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import asdict, dataclass
from decimal import Decimal
from typing import Any

from simulator.catalog import Catalog, Product, StoreSpec, Variant


@dataclass(frozen=True)
class RequestRecord:
    """One request the simulator answered (`store` None = the control app)."""

    at: float
    store: str | None
    epoch: int
    method: str
    path: str
    query: str
    status: int
    fault: str | None = None


class TruthLog:
    """Append-only record of requests served and faults injected."""

    def __init__(self, clock: Callable[[], float]) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._requests: list[RequestRecord] = []
        self._fault_hits: dict[tuple[str, int], int] = {}

    def record(self, store: str | None, epoch: int, method: str, path: str, query: str,
               status: int, fault: str | None = None) -> RequestRecord:
        entry = RequestRecord(self._clock(), store, epoch, method, path, query, status, fault)
        with self._lock:
            self._requests.append(entry)
        return entry

    def claim_fault(self, store: str, epoch: int, times: int | None) -> bool:
        """Count one faulty answer; False once `times` have been served."""
        with self._lock:
            used = self._fault_hits.get((store, epoch), 0)
            if times is not None and used >= times:
                return False
            self._fault_hits[(store, epoch)] = used + 1
            return True

    def requests(self, store: str | None = None) -> tuple[RequestRecord, ...]:
        with self._lock:
            items = tuple(self._requests)
        return items if store is None else tuple(r for r in items if r.store == store)

    def faults(self) -> tuple[RequestRecord, ...]:
        return tuple(r for r in self.requests() if r.fault is not None)

    def faulted_epochs(self) -> dict[str, tuple[int, ...]]:
        """store key -> sorted epochs in which it answered with a fault."""
        result: dict[str, set[int]] = {}
        for r in self.faults():
            result.setdefault(str(r.store), set()).add(r.epoch)
        return {k: tuple(sorted(v)) for k, v in sorted(result.items())}

    def private_hits(self) -> tuple[RequestRecord, ...]:
        """Requests for robots-forbidden paths (a polite crawler makes none)."""
        return tuple(r for r in self.requests() if r.path.startswith("/private/"))


def record_json(record: RequestRecord) -> dict[str, Any]:
    return asdict(record)


def product_url(store: StoreSpec, base_url: str, product: Product) -> str:
    if store.platform == "woocommerce":
        return f"{base_url}/product/{product.handle}/"
    if store.platform == "dispensary":
        return f"{base_url}/embedded-menu/{store.slug}/product/{product.handle}"
    return f"{base_url}/products/{product.handle}"


def _money(value: Decimal | None) -> str | None:
    return None if value is None else f"{value:.2f}"


def _offer_truth(variant: Variant, currency: str) -> dict[str, Any]:
    return {
        "option": variant.option,
        "sku": variant.sku,
        "price": _money(variant.price),
        "special_price": _money(variant.special_price),
        "currency": currency,
        "quantity": variant.quantity,
        "availability": "in_stock" if variant.quantity > 0 else "out_of_stock",
    }


def product_truth(store: StoreSpec, base_url: str, product: Product) -> dict[str, Any]:
    return {
        "provider_id": product.provider_id,
        "name": product.name,
        "brand": product.brand,
        "category": product.category,
        "handle": product.handle,
        "url": product_url(store, base_url, product),
        "availability": "in_stock" if product.in_stock else "out_of_stock",
        "offers": [_offer_truth(v, store.currency) for v in product.variants],
    }


def catalog_truth(catalog: Catalog, base_url: str) -> dict[str, Any]:
    """One store at one epoch: listed products by provider id, hidden ids."""
    store = catalog.store
    return {
        "key": store.key,
        "name": store.name,
        "platform": store.platform,
        "platform_id": store.platform_id,
        "base_url": base_url,
        "currency": store.currency,
        "products": {p.provider_id: product_truth(store, base_url, p) for p in catalog.listed},
        "hidden": [p.provider_id for p in catalog.hidden],
    }
