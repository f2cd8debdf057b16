"""Value objects shared by the command side, the workers and the read side.

They are frozen dataclasses with an explicit primitive transcoding
(`to_payload` / `from_payload`): events carry the payload form (str, int,
Decimal, lists and dicts of these), never the objects themselves.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Literal

#: The ledger's availability vocabulary (schema.org values map onto these).
AVAILABILITIES = (
    "in_stock",
    "out_of_stock",
    "preorder",
    "backorder",
    "discontinued",
    "limited",
    "unknown",
)
#: Availabilities that mean "the store says you cannot buy it now".
UNAVAILABLE = frozenset({"out_of_stock", "discontinued"})



def shown_in_stock(in_stock: bool, availability: str | None) -> bool | None:
    """What readers are told about stock: False once out of stock (the store said so or the
    product went missing), None while the store has not said (`unknown`), True otherwise.

    The aggregate's own flag starts true and only a miss or an unavailable answer clears
    it; shown as is, a product whose pages never state stock would read "in stock".
    """
    if not in_stock:
        return False
    return None if (availability or "unknown") == "unknown" else True


JOB_KINDS = ("store_discovery", "entry_point", "catalog", "product_page", "feed")


def _dec(value: Any) -> Decimal | None:
    return None if value is None else Decimal(str(value))


@dataclass(frozen=True)
class Offer:
    """One purchasable option of a product (a variant, a weight, a size)."""

    option: str
    price: Decimal | None
    currency: str | None
    special_price: Decimal | None = None
    pricing_type: str = "regular"
    availability: str | None = None
    quantity: int | None = None

    def to_payload(self) -> dict[str, Any]:
        return {
            "option": self.option,
            "price": self.price,
            "currency": self.currency,
            "special_price": self.special_price,
            "pricing_type": self.pricing_type,
            "availability": self.availability,
            "quantity": self.quantity,
        }

    @classmethod
    def from_payload(cls, data: Mapping[str, Any]) -> Offer:
        return cls(
            option=str(data["option"]),
            price=_dec(data.get("price")),
            currency=data.get("currency"),
            special_price=_dec(data.get("special_price")),
            pricing_type=data.get("pricing_type") or "regular",
            availability=data.get("availability"),
            quantity=data.get("quantity"),
        )


@dataclass(frozen=True)
class Observation:
    """What one crawl saw of one product."""

    provider_product_id: str
    name: str
    offers: tuple[Offer, ...] = ()
    availability: str = "unknown"
    brand: str | None = None
    category: str | None = None
    url: str | None = None
    image_url: str | None = None
    sku: str | None = None
    quantity: int | None = None
    #: e.g. {"thc": "18.5-21%", "cbd": "<1%", "strain_type": "Hybrid"}
    attributes: Mapping[str, str] = field(default_factory=dict)
    #: the shop's product text, as plain text (searched, not shown in lists)
    description: str | None = None

    def to_payload(self) -> dict[str, Any]:
        return {
            "provider_product_id": self.provider_product_id,
            "name": self.name,
            "offers": [o.to_payload() for o in self.offers],
            "availability": self.availability,
            "brand": self.brand,
            "category": self.category,
            "url": self.url,
            "image_url": self.image_url,
            "sku": self.sku,
            "quantity": self.quantity,
            "attributes": dict(self.attributes),
            # only when there is one: payloads of observations without stay as they were
            **({"description": self.description} if self.description is not None else {}),
        }

    @classmethod
    def from_payload(cls, data: Mapping[str, Any]) -> Observation:
        return cls(
            provider_product_id=str(data["provider_product_id"]),
            name=str(data["name"]),
            offers=tuple(Offer.from_payload(o) for o in data.get("offers") or ()),
            availability=data.get("availability") or "unknown",
            brand=data.get("brand"),
            category=data.get("category"),
            url=data.get("url"),
            image_url=data.get("image_url"),
            sku=data.get("sku"),
            quantity=data.get("quantity"),
            attributes=dict(data.get("attributes") or {}),
            description=data.get("description"),
        )


@dataclass(frozen=True)
class DiscoveredStore:
    """A store found on a store locator (store discovery jobs)."""

    name: str
    base_url: str
    platform: str
    entry_url: str
    region: str | None = None
    timezone: str | None = None


@dataclass(frozen=True)
class Policy:
    """How politely a store is crawled (from `Store.PolicyChanged`)."""

    crawl_delay: float = 1.0
    max_concurrency: int = 1
    respect_robots: bool = True
    user_agent: str | None = None
    #: egress through the proxy pool: None (direct), "pool" (any proxy), "region:R"
    egress: str | None = None


@dataclass(frozen=True)
class CrawlTask:
    """What a worker needs to crawl one leased job; no driver knowledge."""

    job_id: str
    lease_id: str
    attempt: int
    kind: str
    url: str
    store_id: str | None = None
    platform: str | None = None
    platform_store_id: str | None = None
    currency: str | None = None
    policy: Policy = field(default_factory=Policy)

    def to_payload(self) -> dict[str, Any]:
        """Plain JSON (what the bot API hands a remote worker)."""
        return {**{k: v for k, v in vars(self).items() if k != "policy"},
                "policy": dict(vars(self.policy))}

    @classmethod
    def from_payload(cls, data: Mapping[str, Any]) -> CrawlTask:
        return cls(str(data["job_id"]), str(data["lease_id"]), int(data["attempt"]),
                   str(data["kind"]), str(data["url"]), data.get("store_id"),
                   data.get("platform"), data.get("platform_store_id"), data.get("currency"),
                   Policy(**dict(data.get("policy") or {})))


@dataclass(frozen=True)
class CrawlSuccess:
    """A crawl that got an answer it could read (it may hold zero products)."""

    http_status: int
    final_url: str
    extractor: str
    extractor_version: str
    content_hash: str
    raw_ref: str | None = None
    pages: int = 1
    bytes: int = 0
    duration: float = 0.0
    observations: tuple[Observation, ...] = ()
    #: store discovery: stores on the locator
    stores: tuple[DiscoveredStore, ...] = ()
    #: entry point: the platform's id for the store, and the catalog URL to crawl
    platform_store_id: str | None = None
    catalog_url: str | None = None
    #: feeds: normalised product-page URLs found
    links: tuple[str, ...] = ()
    #: links and stores found beyond the crawler's per-result cap (not in `links`/`stores`)
    links_dropped: int = 0
    #: product pages: the page answered 404/410 — the store no longer offers the product
    gone: bool = False
    ok: Literal[True] = True


@dataclass(frozen=True)
class CrawlFailure:
    """A crawl that failed; `error_kind` is one of `ERROR_KINDS`."""

    error_kind: str
    message: str
    retryable: bool
    http_status: int | None = None
    retry_after: float | None = None
    duration: float = 0.0
    ok: Literal[False] = False


CrawlOutcome = CrawlSuccess | CrawlFailure

#: Every way a crawl can fail, with whether a retry may help.
ERROR_KINDS: dict[str, bool] = {
    "robots_disallowed": False,
    "dns": True,
    "connect": True,
    "timeout": True,
    "tls": False,
    "too_many_redirects": False,
    "too_large": True,
    "truncated": True,
    "bad_encoding": False,
    "blocked_address": False,
    "http_4xx": False,
    "http_5xx": True,
    "rate_limited": True,
    "blocked": True,
    "parse_error": False,
    "no_products": False,
    "lease_expired": True,
    "worker_error": True,
}


@dataclass(frozen=True)
class StoredImage:
    """A product image downloaded, checked and stored under its content hash."""

    url: str
    sha256: str
    width: int
    height: int
    format: str  # Pillow's name: JPEG, PNG, WEBP, GIF
    bytes: int


@dataclass(frozen=True)
class ImageFailure:
    """A product image that could not be stored, and why (`kind`: a fetch error kind or
    wrong_content_type, not_an_image, decompression_bomb, truncated, unsupported_format)."""

    url: str
    kind: str
    reason: str


ImageOutcome = StoredImage | ImageFailure


@dataclass(frozen=True)
class Origin:
    """Who asked for a change, through which surface, and why: recorded on the events an
    operator command produces, so the ledger answers "who paused this job?".

    `actor`: `token:<name> (<scope>)`, `cli:<user>@<host>`, `worker:<name>` or
    `system:<component>`; `surface`: `cli`, `api`, `dashboard`, `bot`, `agent`, `runner`
    or `system`; `reason`: free text, optional.
    """

    actor: str
    surface: str
    reason: str | None = None

    def fields(self) -> dict[str, str | None]:
        """The event fields that record it."""
        return {"actor": self.actor, "surface": self.surface, "reason": self.reason}


def who_and_where(origin: Origin | None) -> dict[str, str | None]:
    """An origin's actor and surface as event fields, for events whose reason is a field of
    their own (none without an origin: events recorded before origins carry neither)."""
    return {"actor": origin.actor, "surface": origin.surface} if origin is not None else {}

