"""Product images: each product's current image URL and what became of it.

`status` is `pending` while the current URL has not been tried, then `stored`
(with the content hash and its facts) or `failed` (with the kind and reason); a
new image URL (`Product.DetailsChanged`) makes it pending again. The image step
(`runtime.image_step`) asks `pending_images` what to download.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from domain.envelope import Envelope
from projections.db import Database, Row
from projections.framework import Handler, Projection, Table, creator, updater

PRODUCT_IMAGES = Table(
    name="product_images",
    key=("product_id",),
    columns={
        "product_id": "text", "store_id": "text", "image_url": "text", "status": "text",
        "sha256": "text", "width": "int", "height": "int", "format": "text", "bytes": "int",
        "kind": "text", "reason": "text", "tried_at": "text", "version": "int",
    },
    indexes=(("status", "product_id"), ("sha256",)),
)

_CLEARED = {"sha256": None, "width": None, "height": None, "format": None, "bytes": None,
            "kind": None, "reason": None, "tried_at": None}


@dataclass
class ProductImagesProjection(Projection):
    name: str = field(default="product_images", init=False)
    tables: tuple[Table, ...] = field(default=(PRODUCT_IMAGES,), init=False)

    def handlers(self) -> dict[str, Handler]:
        return {
            "Product.Discovered": creator("product_images", _discovered),
            "Product.DetailsChanged": updater("product_images", _details_changed),
            "Product.ImageStored": updater("product_images", _stored),
            "Product.ImageFailed": updater("product_images", _failed),
        }


def _discovered(env: Envelope) -> Row:
    url = env.payload["image_url"]
    return dict(_CLEARED, product_id=env.stream_id, store_id=env.payload["store_id"],
                image_url=url, status="pending" if url else "none")


def _details_changed(row: Row, p: dict[str, Any]) -> dict[str, Any]:
    url = p["fields"].get("image_url")
    if not url:
        return {}
    return dict(_CLEARED, image_url=url, status="pending")


def _stored(row: Row, p: dict[str, Any]) -> dict[str, Any]:
    return dict(_CLEARED, status="stored", sha256=p["sha256"], width=p["width"],
                height=p["height"], format=p["format"], bytes=p["bytes"], tried_at=p["at"])


def _failed(row: Row, p: dict[str, Any]) -> dict[str, Any]:
    return dict(_CLEARED, status="failed", kind=p["kind"], reason=p["reason"], tried_at=p["at"])


def pending_images(db: Database, limit: int) -> list[Row]:
    """Products whose current image URL is untried, in id order."""
    return db.query("SELECT product_id, store_id, image_url FROM product_images "
                    "WHERE status = 'pending' ORDER BY product_id LIMIT ?", (limit,))


def product_image(db: Database, product_id: str) -> Row | None:
    rows = db.query("SELECT * FROM product_images WHERE product_id = ?", (product_id,))
    return rows[0] if rows else None


def image_products(db: Database, sha256: str) -> list[Row]:
    """The products whose current image is stored under `sha256`."""
    return db.query("SELECT * FROM product_images WHERE sha256 = ? ORDER BY product_id",
                    (sha256,))


def image_counts(db: Database) -> dict[str, int]:
    rows = db.query("SELECT status, count(*) AS n FROM product_images GROUP BY status")
    return {str(r["status"]): int(r["n"]) for r in rows}
