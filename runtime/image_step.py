"""Product images: the content-addressed store and the download step every driver shares.

`ImageStore` keeps each image's bytes once, under their sha256, in
`<data dir>/images/sha256/<2 hex>/<sha256>` (written to a temporary file, then
renamed: a reader never sees half a file), and the API's resized variants under
`<data dir>/images/variants/`. The same bytes found at two URLs, or on two
products, are one file.

`ImageStep` downloads the images the read model lists as pending
(`projections.product_images`) — or, for the distributed image worker, the image URLs that
product events name (`image_requests`) — at most `concurrency` at a time, each URL
once per batch however many products show it, through the crawler's guard and
politeness (`ImagePort`, the `workers.crawler.Crawler`), and records the outcome on
every product that shows the URL (`CrawlLedger.record_image`: once per product and
URL change). Each URL is claimed first (`ledger.tables.image_claims`: another step holding
it is left to finish), then the products are asked, so neither a read model that lags
behind nor two drivers at once make a URL be downloaded twice.
"""

from __future__ import annotations

import asyncio
import io
import logging
import os
import re
import tempfile
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from domain.envelope import Envelope
from domain.errors import LedgerError
from domain.values import ImageFailure, ImageOutcome, Policy
from runtime.clock import Clock
from runtime.db_thread import DbThread
from runtime.ledger import Ledger
from runtime.tables import ImageClaimTable
from workers.fetching.image_download import FORMATS, DownloadedImage, open_image, pillow

if TYPE_CHECKING:
    from PIL import Image

__all__ = ["ImageBatch", "ImagePort", "ImageStep", "ImageStore", "image_requests", "is_sha256",
           "open_stored", "stored_format"]

log = logging.getLogger(__name__)
_SHA256 = re.compile(r"[0-9a-f]{64}")
#: products asked for per batch (their URLs are downloaded together)
BATCH = 64
#: downloads in flight at once
CONCURRENCY = 4
#: seconds a step leaves a URL that another step has claimed before it asks again
BUSY_RETRY = 30.0
#: (product id, store id or None when the event does not say, image URL)
Request = tuple[str, str | None, str]


def is_sha256(text: str) -> bool:
    return _SHA256.fullmatch(text) is not None


class ImagePort(Protocol):
    async def fetch_image(self, url: str, policy: Policy) -> DownloadedImage | ImageFailure: ...


class ImageStore:
    """Image bytes by content hash under `<data dir>/images` (see the module docstring)."""

    def __init__(self, data_dir: Path | str) -> None:
        self.root = Path(data_dir) / "images"

    def path(self, sha256: str) -> Path:
        if not is_sha256(sha256):
            raise ValueError(f"{sha256[:80]!r} is not a sha256 (64 lowercase hex digits)")
        return self.root / "sha256" / sha256[:2] / sha256

    def has(self, sha256: str) -> bool:
        return is_sha256(sha256) and self.path(sha256).is_file()

    def read(self, sha256: str) -> bytes:
        return self.path(sha256).read_bytes()

    def put(self, sha256: str, body: bytes) -> bool:
        """Store `body` under its hash; False when it was stored already."""
        final = self.path(sha256)
        if final.is_file():
            return False
        final.parent.mkdir(parents=True, exist_ok=True)
        handle, tmp = tempfile.mkstemp(dir=final.parent, prefix=".tmp-")
        try:
            with os.fdopen(handle, "wb") as out:
                out.write(body)
            os.link(tmp, final)  # never replaces: of two writers of the same bytes, one wins
        except FileExistsError:
            return False
        finally:
            Path(tmp).unlink(missing_ok=True)
        return True

    def variant_dir(self, sha256: str) -> Path:
        self.path(sha256)  # validates
        return self.root / "variants" / sha256[:2] / sha256


def open_stored(body: bytes) -> Image.Image:
    """The decoded first frame of a stored image, opened under the decompression-bomb cap
    and only in the formats the store takes (`workers.fetching.image_download.open_image`)."""
    return open_image(body)


def stored_format(body: bytes) -> str:
    """The format of a stored image (checked when it was stored): its header is enough."""
    with pillow().open(io.BytesIO(body), formats=FORMATS) as image:
        return str(image.format or "")


def write_atomically(final: Path, body: bytes) -> None:
    final.parent.mkdir(parents=True, exist_ok=True)
    handle, tmp = tempfile.mkstemp(dir=final.parent, prefix=".tmp-")
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(body)
        os.replace(tmp, final)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


@dataclass
class ImageBatch:
    """What image steps did: downloads made, products recorded as stored or failed."""

    downloads: int = 0
    stored: int = 0
    failed: int = 0
    new_files: int = 0
    failures: dict[str, int] = field(default_factory=dict)

    @property
    def recorded(self) -> int:
        return self.stored + self.failed

    def add(self, other: ImageBatch) -> None:
        self.downloads += other.downloads
        self.stored += other.stored
        self.failed += other.failed
        self.new_files += other.new_files
        for kind, count in other.failures.items():
            self.failures[kind] = self.failures.get(kind, 0) + count


class ImageStep:
    """Downloads pending product images and records them; see the module docstring.

    Ledger commands run on `db`, read-model queries and claims on `projector` (the
    embedded runner's threads; a CLI passes its own). `catch_up=False` leaves the read
    models to their projectors (the distributed workers)."""

    def __init__(self, ledger: Ledger, images: ImagePort, clock: Clock, db: DbThread,
                 projector: DbThread | None = None, store: ImageStore | None = None,
                 concurrency: int = CONCURRENCY, batch: int = BATCH,
                 claims: ImageClaimTable | None = None, catch_up: bool = True) -> None:
        self.ledger = ledger
        self.images = images
        self.clock = clock
        self.db = db
        self.projector = projector or db
        self.store = store or ImageStore(ledger.data_dir)
        self.concurrency = max(1, concurrency)
        self.batch = max(1, batch)
        self.claims = claims or ledger.tables.image_claims
        self.catching_up = catch_up
        #: URLs another step holds, and until when this step leaves them alone
        self._busy: dict[str, datetime] = {}
        #: (product, url) pairs the read model lists but the product no longer wants
        #: (the read model lags): not asked again by this step
        self._settled: set[tuple[str, str]] = set()

    async def pending(self, limit: int) -> list[tuple[str, str, str]]:
        """Up to `limit` (product id, store id, image URL) the read model lists as pending."""
        rows = await self.projector.call(self.ledger.read.pending_images,
                                         limit + len(self._settled))
        found = [(r["product_id"], r["store_id"], r["image_url"]) for r in rows]
        now = self.clock.now()
        return [row for row in found if (row[0], row[2]) not in self._settled
                and self._busy.get(row[2], now) <= now][:limit]

    async def has_pending(self) -> bool:
        return bool(await self.pending(1))

    async def run(self, limit: int | None = None) -> ImageBatch:
        """Batches until nothing is pending (or `limit` products are recorded)."""
        total = ImageBatch()
        while limit is None or total.recorded < limit:
            await self._catch_up()
            room = self.batch if limit is None else min(self.batch, limit - total.recorded)
            done = await self.run_batch(room)
            total.add(done)
            if done.recorded == 0 and not await self.has_pending():
                break
        await self._catch_up()
        return total

    async def _catch_up(self) -> None:
        if self.catching_up:
            await self.projector.call(self.ledger.catch_up)

    async def run_batch(self, limit: int = BATCH) -> ImageBatch:
        """One batch: up to `limit` pending products, their URLs downloaded once each."""
        return await self.fetch(await self.pending(limit))

    async def fetch(self, rows: Sequence[Request]) -> ImageBatch:
        """Download and record the image URLs of `rows` the products still want, each
        URL once, unless another step holds its claim."""
        batch = ImageBatch()
        if not rows:
            return batch
        now = self.clock.now()
        claim = await self.projector.call(self.claims.claim, [url for _, _, url in rows], now)
        self._busy.update((url, now + timedelta(seconds=BUSY_RETRY))
                          for _, _, url in rows if url not in claim.urls)
        try:
            await self._fetch_claimed([row for row in rows if row[2] in claim.urls], batch)
        finally:
            await self.projector.call(self.claims.release, claim)
        return batch

    async def _fetch_claimed(self, rows: list[Request], batch: ImageBatch) -> None:
        wanted = set(await self.db.call(self.ledger.app.images_pending,
                                        [(p, url) for p, _, url in rows]))
        self._settled.update((p, url) for p, _, url in rows if (p, url) not in wanted)
        by_url: dict[str, list[tuple[str, str | None]]] = defaultdict(list)
        for product_id, store_id, url in rows:
            if (product_id, url) in wanted and (product_id, store_id) not in by_url[url]:
                by_url[url].append((product_id, store_id))
        gate = asyncio.Semaphore(self.concurrency)
        policies: dict[str, Policy] = {}

        async def one(url: str, products: list[tuple[str, str | None]]) -> None:
            async with gate:
                policy = await self._policy(*products[0], policies)
                outcome = await self._download(url, policy, batch)
            for product_id, _ in products:
                await self._record(product_id, outcome, batch)

        await asyncio.gather(*(one(url, products) for url, products in by_url.items()))

    async def _policy(self, product_id: str, store_id: str | None,
                      cache: dict[str, Policy]) -> Policy:
        if store_id is None:  # a DetailsChanged event does not name the store
            try:
                store_id = await self.db.call(
                    lambda: str(self.ledger.app.get_product(product_id).store_id))
            except LedgerError:
                return Policy()
        if store_id not in cache:
            try:
                cache[store_id] = (await self.db.call(self.ledger.app.get_store, store_id)).policy
            except LedgerError:
                cache[store_id] = Policy()
        return cache[store_id]

    async def _download(self, url: str, policy: Policy, batch: ImageBatch) -> ImageOutcome:
        batch.downloads += 1
        found = await self.images.fetch_image(url, policy)
        if isinstance(found, ImageFailure):
            log.info("image %s not stored: %s: %s", url, found.kind, found.reason)
            return found
        image = found.image
        if await asyncio.to_thread(self.store.put, image.sha256, found.body):
            batch.new_files += 1
        return image

    async def _record(self, product_id: str, outcome: ImageOutcome, batch: ImageBatch) -> None:
        recorded = await self.db.call(self.ledger.app.record_image, product_id, outcome,
                                      self.clock.now())
        if not recorded:
            self._settled.add((product_id, outcome.url))
        elif isinstance(outcome, ImageFailure):
            batch.failed += 1
            batch.failures[outcome.kind] = batch.failures.get(outcome.kind, 0) + 1
        else:
            batch.stored += 1


def image_requests(envelopes: Iterable[Envelope]) -> list[Request]:
    """The image URLs product events give products: a `Product.Discovered` with an image,
    a `Product.DetailsChanged` to a new one (what the distributed image worker reads)."""
    found: list[Request] = []
    for env in envelopes:
        if env.event_type == "Product.Discovered" and env.payload.get("image_url"):
            found.append((env.stream_id, env.payload.get("store_id"), env.payload["image_url"]))
        elif env.event_type == "Product.DetailsChanged":
            url = (env.payload.get("fields") or {}).get("image_url")
            if url:
                found.append((env.stream_id, None, url))
    return found
