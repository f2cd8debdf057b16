"""Deterministic aggregate ids, so re-discovery finds the same stream."""

from __future__ import annotations

from functools import lru_cache
from urllib.parse import urlsplit
from uuid import UUID, uuid5

NAMESPACE = UUID("5b7c2f1e-9a7d-4c41-9d4a-1f0e6c3b8a20")


def origin(url: str) -> str:
    """scheme://host[:port] of a URL, lower-cased."""
    parts = urlsplit(url.strip())
    return f"{parts.scheme.lower()}://{parts.netloc.lower()}"


def store_id(base_url: str) -> UUID:
    return uuid5(NAMESPACE, "store:" + base_url.strip().rstrip("/").lower())


def job_id(kind: str, url_norm: str) -> UUID:
    return uuid5(NAMESPACE, f"job:{kind}:{url_norm}")


#: how many product ids (and parsed ids) are remembered: a catalog's products are
#: derived again at every crawl of it (uuid5 ~2.8 µs, a remembered one ~0.1 µs);
#: ~400 bytes each at most
KEPT = 16_384


@lru_cache(maxsize=KEPT)
def product_id(store: UUID | str, provider_product_id: str) -> UUID:
    return uuid5(NAMESPACE, f"product:{store}:{provider_product_id}")


#: `UUID(text)` remembered (~0.9 µs a parse, ~0.07 µs remembered): a job lists its
#: products' ids as text and each result compares them with what it saw
parsed = lru_cache(maxsize=KEPT)(UUID)


def worker_id(name: str) -> UUID:
    return uuid5(NAMESPACE, f"worker:{name}")


def delivery_id(subscription: UUID | str, event_id: str) -> UUID:
    """One alert per subscription and triggering event (`domain.delivery`)."""
    return uuid5(NAMESPACE, f"delivery:{subscription}:{event_id}")


def proxy_id(address: str) -> UUID:
    """One proxy per address (scheme://host:port, without credentials)."""
    return uuid5(NAMESPACE, f"proxy:{address.lower()}")
