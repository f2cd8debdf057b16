"""The product search documents: per product, the text a search looks in.

One row per product with its name, brand, category, store name and description,
indexed for full-text search (`projections.search`). The store name comes from the
store's `Registered` event: the projection keeps the names it needs in
`search_stores`, so the documents depend on its own events alone, never on how far
another read model has caught up. A Kafka projector may see a product before its
store (they travel on different topics), so a name not known at discovery is filled
in after the batch that brings it: in either order the rows end as a rebuild in log
order makes them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from domain.envelope import Envelope
from projections.db import Tx
from projections.framework import Handler, Projection, Rows, Table, updater

#: the fields of `Product.DetailsChanged` that are searched
TEXT_FIELDS = ("name", "brand", "category", "description")

PRODUCT_SEARCH = Table(
    name="product_search",
    key=("product_id",),
    columns={
        "product_id": "text", "store_id": "text", "name": "text", "brand": "text",
        "category": "text", "store_name": "text", "description": "text", "version": "int",
    },
    indexes=(("store_id", "product_id"),),
    search=("name", "brand", "category", "store_name", "description"),
)

SEARCH_STORES = Table(
    name="search_stores",
    key=("store_id",),
    columns={"store_id": "text", "name": "text"},
)


@dataclass
class ProductSearchProjection(Projection):
    name: str = field(default="product_search", init=False)
    tables: tuple[Table, ...] = field(default=(PRODUCT_SEARCH, SEARCH_STORES), init=False)

    def handlers(self) -> dict[str, Handler]:
        return {
            "Store.Registered": _store_registered,
            "Product.Discovered": _discovered,
            "Product.DetailsChanged": updater("product_search", _details_changed),
        }

    def apply(self, tx: Tx, envelopes: Sequence[Envelope]) -> None:
        """The handlers, then the store names not known when their documents were
        written: every unnamed document of a store registered in this batch. A document
        is written unnamed only while its store is not registered (`_discovered` names
        it otherwise), so after each batch every document of a registered store is
        named, and a batch without a registration has nothing to fill in."""
        super().apply(tx, envelopes)
        documents, names = f"{self.prefix}product_search", f"{self.prefix}search_stores"
        registered = sorted({e.stream_id for e in envelopes if e.event_type == "Store.Registered"})
        for start in range(0, len(registered), 500):
            part = registered[start:start + 500]
            tx.execute(f"UPDATE {documents} SET store_name = (SELECT s.name FROM {names} s "
                       f"WHERE s.store_id = {documents}.store_id) WHERE store_name IS NULL "
                       f"AND store_id IN ({', '.join('?' for _ in part)})", part)


def _store_registered(env: Envelope, rows: Rows) -> None:
    if rows.get("search_stores", env.stream_id) is None:
        rows.put("search_stores", {"store_id": env.stream_id, "name": env.payload["name"]})


def _discovered(env: Envelope, rows: Rows) -> None:
    if rows.get("product_search", env.stream_id) is not None:
        return  # delivered again
    p = env.payload
    store = rows.get("search_stores", p["store_id"])  # if not yet: `ProductSearchProjection.apply`
    rows.put("product_search", {
        "product_id": env.stream_id, "store_id": p["store_id"], "name": p["name"],
        "brand": p["brand"], "category": p["category"],
        "store_name": store["name"] if store else None,
        "description": p.get("description"), "version": env.version,
    })


def _details_changed(row: dict[str, Any], p: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in p["fields"].items() if k in TEXT_FIELDS}
