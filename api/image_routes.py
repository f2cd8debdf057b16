"""`GET /images/{sha256}`: stored product images, resized on demand.

The image is the one stored under that content hash (`runtime.image_step.ImageStore`);
read scope or a dashboard session may see it. Without parameters it is served as
stored. With any of them a variant is rendered with Pillow and kept on disk, keyed
by the hash and the (normalised) parameters:

- `w`, `h` (1..4000): the box. With one of them the other follows the aspect
  ratio; with both, `fit` decides: `cover` (fill the box, crop the overflow;
  the default), `contain` (fit inside, pad to the box: transparent, or white for
  JPEG), `fill` (stretch), `inside` (fit inside, no padding), `outside` (cover
  the box, no crop). No side of a result exceeds 4000 pixels: a larger one is
  scaled down, keeping the aspect ratio.
- `format`: webp, jpeg, png or avif (avif only where Pillow was built with it);
  by default the stored format (a GIF becomes PNG). `q` (1..100, default 80):
  the quality of webp, jpeg and avif.
- `blur` (0..100): a Gaussian blur of that radius; `gray=1`: grayscale.

Bad parameters are a 422 problem, an unknown hash a 404. Responses carry the
content type, an ETag (a matching `If-None-Match` gets a 304) and
`Cache-Control: private, max-age=31536000, immutable`: the bytes behind a hash and
parameters never change. At most `RENDERS` variants are rendered at once, and at
most `MAX_VARIANTS` are kept per image (beyond that they are rendered, not kept).
"""

from __future__ import annotations

import hashlib
import io
import math
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path as FilePath
from typing import Annotated, Literal

from fastapi import APIRouter, Depends, Header, Path, Query
from fastapi.responses import Response
from PIL import Image, ImageFilter, ImageOps, features

from api.auth import Token
from api.routes import PROBLEMS, ApiProblem
from runtime.image_step import ImageStore, open_stored, stored_format, write_atomically

__all__ = ["MAX_SIDE", "Variant", "build_images_router", "render", "target_size"]

MAX_SIDE = 4000
MAX_BLUR = 100.0
DEFAULT_QUALITY = 80
#: variants kept on disk per image
MAX_VARIANTS = 64
#: variants rendered at once (each may hold a 4000 x 4000 RGBA image: 64 MB)
RENDERS = 2
#: part of every variant's key: a change of how variants are rendered changes it
RENDER_VERSION = "1"
IMMUTABLE = "private, max-age=31536000, immutable"

Fit = Literal["cover", "contain", "fill", "inside", "outside"]
Format = Literal["webp", "jpeg", "png", "avif"]
#: our name -> (Pillow's, media type)
FORMATS = {"webp": ("WEBP", "image/webp"), "jpeg": ("JPEG", "image/jpeg"),
           "png": ("PNG", "image/png"), "avif": ("AVIF", "image/avif")}
#: a stored format -> the format of its variants when none is asked for
_SAME = {"JPEG": "jpeg", "PNG": "png", "WEBP": "webp", "AVIF": "avif"}
_STORED_TYPES = {"JPEG": "image/jpeg", "PNG": "image/png", "WEBP": "image/webp",
                 "GIF": "image/gif", "AVIF": "image/avif"}
_SHA256 = Annotated[str, Path(pattern=r"^[0-9a-f]{64}$",
                              description="the image's sha256 (64 lowercase hex digits)")]


def avif_supported() -> bool:
    return bool(features.check("avif"))


@dataclass(frozen=True)
class Variant:
    """Normalised parameters: equal variants render the same bytes."""

    width: int | None = None
    height: int | None = None
    fit: str = "cover"
    format: str | None = None
    quality: int | None = None
    blur: float | None = None
    gray: bool = False

    @classmethod
    def of(cls, w: int | None, h: int | None, fit: str, fmt: str | None, q: int | None,
           blur: float | None, gray: bool) -> Variant:
        return cls(width=w, height=h, fit=fit if w is not None and h is not None else "-",
                   format=fmt, quality=q if fmt != "png" else None,
                   blur=round(blur, 2) if blur else None, gray=gray)

    @property
    def original(self) -> bool:
        return (self.width, self.height, self.format, self.quality, self.blur, self.gray) == (
            None, None, None, None, None, False)

    def key(self, stored_format: str) -> str:
        fmt = self.output_format(stored_format)
        text = (f"v{RENDER_VERSION}:w={self.width}:h={self.height}:fit={self.fit}:f={fmt}"
                f":q={self.quality_for(fmt)}:blur={self.blur}:gray={int(self.gray)}")
        return hashlib.sha256(text.encode()).hexdigest()[:32]

    def output_format(self, stored_format: str) -> str:
        return self.format or _SAME.get(stored_format, "png")

    def quality_for(self, fmt: str) -> int | None:
        return None if fmt == "png" else self.quality or DEFAULT_QUALITY


def target_size(width: int, height: int, variant: Variant) -> tuple[int, int]:
    """The size of the rendered image (before padding or cropping: the box's size)."""
    w, h = variant.width, variant.height
    if w is None and h is None:
        tw, th = width, height
    elif h is None:
        assert w is not None
        tw, th = w, max(1, round(height * w / width))
    elif w is None:
        tw, th = max(1, round(width * h / height)), h
    elif variant.fit in ("cover", "contain", "fill"):
        tw, th = w, h
    elif variant.fit == "inside":
        scale = min(w / width, h / height)
        tw, th = min(w, max(1, round(width * scale))), min(h, max(1, round(height * scale)))
    else:  # outside
        scale = max(w / width, h / height)
        tw, th = max(w, round(width * scale)), max(h, round(height * scale))
    if tw > MAX_SIDE or th > MAX_SIDE:
        scale = min(MAX_SIDE / tw, MAX_SIDE / th)
        tw, th = max(1, min(MAX_SIDE, math.floor(tw * scale))), max(1, min(MAX_SIDE, math.floor(th * scale)))
    return tw, th


def _has_alpha(image: Image.Image) -> bool:
    return image.mode in ("RGBA", "LA", "PA", "RGBa", "La") or "transparency" in image.info


def render(body: bytes, variant: Variant) -> tuple[bytes, str]:
    """(the variant's bytes, our format name) of a stored image."""
    source = open_stored(body)
    stored_format = source.format or ""
    fmt = variant.output_format(stored_format)
    image = ImageOps.exif_transpose(source)
    alpha = _has_alpha(image)
    image = image.convert("RGBA" if alpha else "RGB")
    size = target_size(image.width, image.height, variant)
    method = Image.Resampling.LANCZOS
    both = variant.width is not None and variant.height is not None
    if both and variant.fit == "cover":
        image = ImageOps.fit(image, size, method)
    elif both and variant.fit == "contain":
        keeps_alpha = fmt != "jpeg"
        if keeps_alpha and image.mode != "RGBA":
            image = image.convert("RGBA")
        pad = (0, 0, 0, 0) if keeps_alpha else (255, 255, 255)
        image = ImageOps.pad(image, size, method, color=pad)
    elif size != image.size:
        image = image.resize(size, method)
    if variant.blur:
        image = image.filter(ImageFilter.GaussianBlur(variant.blur))
    if variant.gray:
        image = image.convert("LA" if image.mode == "RGBA" else "L")
    return _encode(image, fmt, variant.quality_for(fmt)), fmt


def _encode(image: Image.Image, fmt: str, quality: int | None) -> bytes:
    pillow_name = FORMATS[fmt][0]
    if fmt == "jpeg" and image.mode in ("RGBA", "LA"):  # no alpha in JPEG: onto white
        gray = image.mode == "LA"
        rgba = image.convert("RGBA")
        base = Image.new("RGBA", rgba.size, (255, 255, 255, 255))
        image = Image.alpha_composite(base, rgba).convert("L" if gray else "RGB")
    elif fmt in ("webp", "avif") and image.mode in ("L", "LA"):
        image = image.convert("RGBA" if image.mode == "LA" else "RGB")
    out = io.BytesIO()
    options: dict[str, object] = {} if quality is None else {"quality": quality}
    if fmt == "png":
        options["optimize"] = False
    image.save(out, pillow_name, **options)
    return out.getvalue()


def build_images_router(store: ImageStore, require: Callable[[str], Callable[..., Token]]
                        ) -> APIRouter:
    router = APIRouter(responses=PROBLEMS, tags=["images"])
    gate = threading.BoundedSemaphore(RENDERS)
    avif = avif_supported()

    @router.get("/images/{sha256}", dependencies=[Depends(require("read"))],
                response_class=Response,
                responses={200: {"content": {t: {} for _, t in FORMATS.values()},
                                 "description": "the image"},
                           304: {"description": "not modified (If-None-Match)"}})
    def image(sha256: _SHA256,
              w: Annotated[int | None, Query(ge=1, le=MAX_SIDE)] = None,
              h: Annotated[int | None, Query(ge=1, le=MAX_SIDE)] = None,
              q: Annotated[int | None, Query(ge=1, le=100)] = None,
              fit: Fit = "cover",
              format: Format | None = None,  # noqa: A002 - the parameter's public name
              blur: Annotated[float | None, Query(ge=0, le=MAX_BLUR, allow_inf_nan=False)] = None,
              gray: bool = False,
              if_none_match: Annotated[str | None, Header()] = None) -> Response:
        """A stored product image, as stored or resized (see the parameters)."""
        if format == "avif" and not avif:
            raise ApiProblem(422, "Invalid input", "format=avif: this server's Pillow was built "
                                                   "without AVIF; use webp, jpeg or png")
        if not store.has(sha256):
            raise ApiProblem(404, "Not Found", f"no image stored under {sha256}")
        variant = Variant.of(w, h, fit, format, q, blur, gray)
        body = store.read(sha256)
        if variant.original:
            media_type = _STORED_TYPES.get(stored_format(body), "application/octet-stream")
            return _reply(body, media_type, f'"{sha256}"', if_none_match)
        source_format = stored_format(body)
        key = variant.key(source_format)
        fmt = variant.output_format(source_format)
        etag = f'"{sha256[:16]}-{key}"'
        if _matches(if_none_match, etag):
            return Response(status_code=304, headers=_headers(etag))
        cached = store.variant_dir(sha256) / f"{key}.{fmt}"
        if cached.is_file():
            return _reply(cached.read_bytes(), FORMATS[fmt][1], etag, None)
        with gate:
            rendered, fmt = render(body, variant)
        _keep(cached, rendered)
        return _reply(rendered, FORMATS[fmt][1], etag, None)

    return router


def _keep(path: FilePath, body: bytes) -> None:
    try:
        if path.parent.is_dir() and sum(1 for _ in path.parent.iterdir()) >= MAX_VARIANTS:
            return
        write_atomically(path, body)
    except OSError:
        pass  # a cache that cannot be written is only slower


def _headers(etag: str) -> dict[str, str]:
    return {"ETag": etag, "Cache-Control": IMMUTABLE, "X-Content-Type-Options": "nosniff",
            "Content-Security-Policy": "default-src 'none'"}


def _matches(if_none_match: str | None, etag: str) -> bool:
    if not if_none_match:
        return False
    sent = {tag.strip().removeprefix("W/") for tag in if_none_match.split(",")}
    return etag in sent or "*" in sent


def _reply(body: bytes, media_type: str, etag: str, if_none_match: str | None) -> Response:
    if _matches(if_none_match, etag):
        return Response(status_code=304, headers=_headers(etag))
    return Response(body, media_type=media_type, headers=_headers(etag))
