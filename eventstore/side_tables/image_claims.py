"""Who is downloading an image URL right now (`ImageClaimTable`).

Every image step (the embedded runner's, `crawl-ledger images fetch`, the distributed
`worker --role image`: `runtime.image_step`) claims a URL before it asks the products
whether they still want it and downloads it, and releases the claim after the outcome
is recorded. A URL claimed by another step is left to it, so two drivers never download
the same image at once; a step that asks after the other recorded finds nothing pending
(the product says so), so none downloads it twice. A claim whose holder died ends after
`ttl` seconds, and the URL may be claimed again. Claims are coordination, not history,
and are never events.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from datetime import datetime

from eventstore.database import Database
from eventstore.side_tables.ports import Claim
from eventstore.side_tables.schema import IMAGE_CLAIMS

__all__ = ["CLAIM_TTL", "ImageClaims"]

#: seconds after which a claim is presumed abandoned (a download takes far less)
CLAIM_TTL = 600.0


class ImageClaims:
    def __init__(self, db: Database, ttl: float = CLAIM_TTL) -> None:
        self.db = db
        self.ttl = ttl

    def claim(self, urls: Iterable[str], now: datetime) -> Claim:
        at, token = now.timestamp(), uuid.uuid4().hex
        won = set()
        for url in sorted(set(urls)):  # one order everywhere: no two steps deadlock
            with self.db.transaction() as tx:
                tx.execute(f"INSERT INTO {IMAGE_CLAIMS} (url, owner, claimed_at) VALUES (?, ?, ?) "
                           f"ON CONFLICT (url) DO UPDATE SET owner = excluded.owner, "
                           f"claimed_at = excluded.claimed_at "
                           f"WHERE {IMAGE_CLAIMS}.claimed_at < ?",
                           (url, token, at, at - self.ttl))
                rows = tx.execute(f"SELECT owner FROM {IMAGE_CLAIMS} WHERE url = ?", (url,))
            if rows and rows[0]["owner"] == token:
                won.add(url)
        return Claim(token, frozenset(won))

    def release(self, claim: Claim) -> None:
        with self.db.transaction() as tx:
            for url in claim.urls:
                tx.execute(f"DELETE FROM {IMAGE_CLAIMS} WHERE url = ? AND owner = ?",
                           (url, claim.token))

    def held(self) -> dict[str, str]:
        rows = self.db.query(f"SELECT url, owner FROM {IMAGE_CLAIMS}")
        return {r["url"]: r["owner"] for r in rows}
