"""The GraphQL documents the dispensary menu API is queried with.

Kept apart from the adapter so the (long) query text does not bury the logic;
the server only needs `operationName` and `variables`, but we send a real
query selecting exactly the fields the adapter reads.
"""

from __future__ import annotations

from typing import Any

__all__ = ["PER_PAGE", "dispensaries_body", "products_body"]

PER_PAGE = 50

PRODUCTS_QUERY = """query FilteredProducts($productsFilter: productsFilterInput!, $page: Int, $perPage: Int) {
  filteredProducts(filter: $productsFilter, page: $page, perPage: $perPage) {
    products {
      _id id Name brandName brand { id name } type subcategory strainType Status Image
      Options rawOptions Prices recPrices medicalPrices recSpecialPrices medicalSpecialPrices
      POSMetaData { children { option quantity quantityAvailable Status } }
      THCContent { unit range }
      CBDContent { unit range }
    }
    queryInfo { totalCount totalPages }
  }
}"""

DISPENSARIES_QUERY = """query ConsumerDispensaries($dispensaryFilter: dispensariesFilterInput!) {
  filteredDispensaries(filter: $dispensaryFilter) {
    id name cName timezone
  }
}"""


def products_body(dispensary_id: str, page: int, per_page: int = PER_PAGE) -> dict[str, Any]:
    return {
        "operationName": "FilteredProducts",
        "variables": {
            "productsFilter": {
                "dispensaryId": dispensary_id,
                "pricingType": "rec",
                "Status": "All",
                "types": [],
            },
            "page": page,
            "perPage": per_page,
        },
        "query": PRODUCTS_QUERY,
    }


def dispensaries_body(slug: str) -> dict[str, Any]:
    return {
        "operationName": "ConsumerDispensaries",
        "variables": {"dispensaryFilter": {"cNameOrID": slug}},
        "query": DISPENSARIES_QUERY,
    }
