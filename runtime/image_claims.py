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
from dataclasses import dataclass
from datetime import datetime

from projections.db import Database

__all__ = ["CLAIM_TTL", "Claim", "ImageClaims"]

TABLE = "image_claims"
#: seconds after which a claim is presumed abandoned (a download takes far less)
CLAIM_TTL = 600.0


@dataclass(frozen=True)
class Claim:
    """The URLs one `claim` call won, under its own token (two batches of one step, the
    image agent's and its sweep's, are two claimants too)."""

    token: str
    urls: frozenset[str]


class ImageClaims:
    """Claims on image URLs in the read-model database (see the module docstring)."""

    def __init__(self, db: Database, ttl: float = CLAIM_TTL) -> None:
        self.db = db
        self.ttl = ttl
        text, real = db.column_type("text"), db.column_type("real")
        with db.transaction() as tx:
            tx.execute(f"CREATE TABLE IF NOT EXISTS {TABLE} (url {text} PRIMARY KEY, "
                       f"owner {text} NOT NULL, claimed_at {real} NOT NULL)")

    def claim(self, urls: Iterable[str], now: datetime) -> Claim:
        """Claim each URL that is free (or whose claim ran out); the URLs won."""
        at, token = now.timestamp(), uuid.uuid4().hex
        won = set()
        for url in sorted(set(urls)):  # one order everywhere: no two steps deadlock
            with self.db.transaction() as tx:
                tx.execute(f"INSERT INTO {TABLE} (url, owner, claimed_at) VALUES (?, ?, ?) "
                           f"ON CONFLICT (url) DO UPDATE SET owner = excluded.owner, "
                           f"claimed_at = excluded.claimed_at WHERE {TABLE}.claimed_at < ?",
                           (url, token, at, at - self.ttl))
                rows = tx.execute(f"SELECT owner FROM {TABLE} WHERE url = ?", (url,))
            if rows and rows[0]["owner"] == token:
                won.add(url)
        return Claim(token, frozenset(won))

    def release(self, claim: Claim) -> None:
        """Give the claim's URLs back (those taken over after it ran out stay taken)."""
        with self.db.transaction() as tx:
            for url in claim.urls:
                tx.execute(f"DELETE FROM {TABLE} WHERE url = ? AND owner = ?", (url, claim.token))

    def held(self) -> dict[str, str]:
        """Every claim now in the table: URL -> owner (tests, diagnostics)."""
        return {r["url"]: r["owner"] for r in self.db.query(f"SELECT url, owner FROM {TABLE}")}
