"""Who is downloading an image URL right now: claims beside the read models.

Every image step (the embedded runner's, `crawl-ledger images fetch`, the distributed
`worker --role image`) claims a URL before it asks the products whether they still
want it and downloads it, and releases the claim after the outcome is recorded. A URL
claimed by another step is left to it, so two drivers never download the same image
at once; a step that asks after the other recorded finds nothing pending (the product
says so), so none downloads it twice. A claim whose holder died ends after `ttl`
seconds, and the URL may be claimed again.

The table `image_claims` lives in the read-model database (like `api_tokens` and
`proxy_urls`): claims are coordination, not history, and are never events.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from datetime import datetime

from projections.db import Database

__all__ = ["CLAIM_TTL", "ImageClaims"]

TABLE = "image_claims"
#: seconds after which a claim is presumed abandoned (a download takes far less)
CLAIM_TTL = 600.0


class ImageClaims:
    """Claims on image URLs held by one step (`owner`, unique per instance)."""

    def __init__(self, db: Database, ttl: float = CLAIM_TTL) -> None:
        self.db = db
        self.ttl = ttl
        self.owner = uuid.uuid4().hex
        text, real = db.column_type("text"), db.column_type("real")
        with db.transaction() as tx:
            tx.execute(f"CREATE TABLE IF NOT EXISTS {TABLE} (url {text} PRIMARY KEY, "
                       f"owner {text} NOT NULL, claimed_at {real} NOT NULL)")

    def claim(self, urls: Iterable[str], now: datetime) -> set[str]:
        """Claim each URL that is free (or whose claim ran out); the URLs now held."""
        at = now.timestamp()
        won = set()
        for url in sorted(set(urls)):  # one order everywhere: no two steps deadlock
            with self.db.transaction() as tx:
                tx.execute(f"INSERT INTO {TABLE} (url, owner, claimed_at) VALUES (?, ?, ?) "
                           f"ON CONFLICT (url) DO UPDATE SET owner = excluded.owner, "
                           f"claimed_at = excluded.claimed_at WHERE {TABLE}.claimed_at < ?",
                           (url, self.owner, at, at - self.ttl))
                rows = tx.execute(f"SELECT owner FROM {TABLE} WHERE url = ?", (url,))
            if rows and rows[0]["owner"] == self.owner:
                won.add(url)
        return won

    def release(self, urls: Iterable[str]) -> None:
        with self.db.transaction() as tx:
            for url in urls:
                tx.execute(f"DELETE FROM {TABLE} WHERE url = ? AND owner = ?", (url, self.owner))

    def held(self) -> dict[str, str]:
        """Every claim now in the table: URL -> owner (tests, diagnostics)."""
        return {r["url"]: r["owner"] for r in self.db.query(f"SELECT url, owner FROM {TABLE}")}
