"""Product images: download one through the crawler's guard and politeness, and check it.

`ImageDownloader.fetch(url, policy)` makes the request the way a page is fetched
(`workers.fetching.fetch.Fetcher`: the SSRF guard on every hop, the store's politeness
slot: robots.txt, spacing, concurrency) with tighter limits (`IMAGE_LIMITS`:
10 MiB, 30 s), then `inspect`s the body. It never raises: a refused address, an
HTTP error, a body that is not an image, too large, truncated, or a
decompression bomb comes back as an `ImageFailure` with its kind and reason.

`inspect` (and `open_image`, which the API's resizing uses) opens only the
formats in `FORMATS`, refuses an image over `MAX_PIXELS` before decoding it
(Pillow's own `Image.MAX_IMAGE_PIXELS` is set to the same cap by `pillow()`, which
imports Pillow on first use: a crawler that meets no image never loads it), and
decodes it fully, so a truncated file is caught here and not when it is served.
"""

from __future__ import annotations

import hashlib
import io
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING

import httpx

from domain.values import ImageFailure, Policy, StoredImage
from workers.extraction.adapters.base import Request
from workers.fetching.addresses import AddressGuard
from workers.fetching.egress import note_failure
from workers.fetching.fetch import Fetcher, FetchLimits, Slot
from workers.fetching.fetch_errors import FetchError
from workers.fetching.politeness import Politeness

if TYPE_CHECKING:
    from PIL import Image

__all__ = ["FORMATS", "IMAGE_LIMITS", "MAX_PIXELS", "DownloadedImage", "ImageDownloader",
           "ImageRejected", "inspect", "open_image", "pillow"]

#: the largest image body downloaded (and stored)
MAX_BYTES = 10 * 1024 * 1024
#: the most pixels an image may declare (a 16-megapixel photo is 4928 x 3264)
MAX_PIXELS = 40_000_000
#: formats opened at all: Pillow's names (no EPS, no PDF, no plugin that runs a tool)
FORMATS = ("JPEG", "PNG", "WEBP", "GIF", "AVIF")
IMAGE_LIMITS = FetchLimits(connect_timeout=10.0, read_timeout=20.0, total_timeout=30.0,
                           max_bytes=MAX_BYTES, max_redirects=5)
ACCEPT = "image/avif,image/webp,image/png,image/jpeg,image/gif;q=0.9,*/*;q=0.1"



def pillow() -> ModuleType:
    """`PIL.Image`, imported on first use (~2.4 MiB of a process that may never need it),
    with its decompression-bomb cap set to ours: Pillow warns above this many pixels and
    refuses above twice as many (DecompressionBombError); `open_image` refuses above it
    outright. Every user of Pillow here gets the module through this function."""
    from PIL import Image

    Image.MAX_IMAGE_PIXELS = MAX_PIXELS
    return Image


class ImageRejected(Exception):
    """The bytes are not an image this ledger stores; `kind` names why."""

    def __init__(self, kind: str, reason: str) -> None:
        super().__init__(reason)
        self.kind, self.reason = kind, reason


@dataclass(frozen=True)
class DownloadedImage:
    """A checked image body and its facts (`image.url` is the URL asked for)."""

    body: bytes
    image: StoredImage


def open_image(body: bytes) -> Image.Image:
    """The decoded first frame of `body`; `ImageRejected` for anything else."""
    pillow()
    from PIL import Image, UnidentifiedImageError
    with warnings.catch_warnings():
        warnings.simplefilter("error", Image.DecompressionBombWarning)
        try:
            image = Image.open(io.BytesIO(body), formats=FORMATS)
        except UnidentifiedImageError:
            raise ImageRejected("not_an_image", "not an image in a supported format "
                                f"({', '.join(FORMATS)})") from None
        except (Image.DecompressionBombError, Image.DecompressionBombWarning) as error:
            raise ImageRejected("decompression_bomb", str(error)) from None
        except (OSError, ValueError, SyntaxError) as error:
            raise ImageRejected("not_an_image", f"unreadable image header: {error}") from None
        width, height = image.size
        if width < 1 or height < 1 or width * height > MAX_PIXELS:
            raise ImageRejected("decompression_bomb", f"{width}x{height} pixels declared "
                                f"(at most {MAX_PIXELS} are decoded)")
        try:
            image.load()
        except (Image.DecompressionBombError, Image.DecompressionBombWarning) as error:
            raise ImageRejected("decompression_bomb", str(error)) from None
        except OSError as error:
            raise ImageRejected("truncated", f"the image data is damaged or cut short: {error}"
                                ) from None
        except (ValueError, SyntaxError, EOFError, MemoryError) as error:
            raise ImageRejected("not_an_image", f"undecodable image: {error}") from None
    return image


def inspect(body: bytes, url: str) -> StoredImage:
    """The facts of an image body (decoded in full to check it); `ImageRejected` when it is
    empty, too large, not an image, truncated or a decompression bomb."""
    if not body:
        raise ImageRejected("not_an_image", "empty body")
    if len(body) > MAX_BYTES:
        raise ImageRejected("too_large", f"{len(body)} bytes (at most {MAX_BYTES})")
    image = open_image(body)
    fmt = image.format or ""
    if fmt not in FORMATS:
        raise ImageRejected("unsupported_format", f"format {fmt or 'unknown'}")
    return StoredImage(url=url, sha256=hashlib.sha256(body).hexdigest(), width=image.width,
                       height=image.height, format=fmt, bytes=len(body))


def _no_text(body: bytes, content_type: str) -> str:
    return ""  # an image body is never decoded as text


class ImageDownloader:
    """Downloads and checks images; see the module docstring."""

    def __init__(self, fetcher: Fetcher, slot_for: Callable[[Policy], Slot] | None = None,
                 user_agent: Callable[[Policy], str] | None = None) -> None:
        self._fetcher = fetcher
        self._slot_for = slot_for
        self._user_agent = user_agent

    @classmethod
    def on(cls, client: httpx.AsyncClient, guard: AddressGuard,
           politeness: Politeness) -> ImageDownloader:
        """A downloader sharing a crawler's client, address guard and politeness."""
        def slot_for(policy: Policy) -> Slot:
            return lambda url: politeness.slot(url, policy)

        return cls(Fetcher(client, IMAGE_LIMITS, decode=_no_text, guard=guard), slot_for,
                   politeness.user_agent)

    async def fetch(self, url: str, policy: Policy) -> DownloadedImage | ImageFailure:
        """The checked image at `url`, or why not; never raises."""
        slot = self._slot_for(policy) if self._slot_for else None
        user_agent = self._user_agent(policy) if self._user_agent else "crawl-ledger"
        try:
            page = await self._fetcher.fetch(Request(url, headers={"Accept": ACCEPT}),
                                             user_agent, slot)
        except FetchError as error:
            note_failure(error)  # through a proxy: the proxy's failure, not its success
            return ImageFailure(url, error.kind, error.message)
        except Exception as error:  # noqa: BLE001 - a bug must not take the step down
            return ImageFailure(url, "worker_error", f"{type(error).__name__}: {error}")
        media_type = page.content_type.split(";")[0].strip().lower()
        if not media_type.startswith("image/"):
            return ImageFailure(url, "wrong_content_type",
                                f"Content-Type {media_type or 'missing'} is not an image type")
        try:
            return DownloadedImage(page.body, inspect(page.body, url))
        except ImageRejected as rejected:
            return ImageFailure(url, rejected.kind, rejected.reason)
