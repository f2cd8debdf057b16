"""Checking downloaded image bodies (workers.fetching.image_download.inspect): what is stored, what is refused."""

from __future__ import annotations

import hashlib

import pytest
from image_fixtures import picture, png_declaring, truncated

from workers.fetching.image_download import MAX_BYTES, ImageRejected, inspect


@pytest.mark.parametrize("fmt", ["PNG", "JPEG", "WEBP", "GIF"])
def test_a_real_image_is_described(fmt: str) -> None:
    body = picture(40, 30, fmt)
    found = inspect(body, "https://shop.example/a")
    assert (found.width, found.height, found.format, found.bytes) == (40, 30, fmt, len(body))
    assert found.sha256 == hashlib.sha256(body).hexdigest()


@pytest.mark.parametrize("body, kind", [
    (png_declaring(100_000, 100_000), "decompression_bomb"),  # Pillow refuses (over 2x cap)
    (png_declaring(8_000, 6_000), "decompression_bomb"),  # over our cap, under Pillow's
    (b"<html>not an image</html>", "not_an_image"),
    (b"", "not_an_image"),
    (truncated(picture(200, 200, "PNG")), "truncated"),
    (truncated(picture(200, 200, "JPEG")), "truncated"),
    (b"%!PS-Adobe-3.0 EPSF-3.0\n", "not_an_image"),  # a format never opened
    (b"\x89PNG\r\n\x1a\n" + b"\x00" * 40, "not_an_image"),
    (b"x" * (MAX_BYTES + 1), "too_large"),
])
def test_hostile_bodies_are_refused_with_a_kind(body: bytes, kind: str) -> None:
    with pytest.raises(ImageRejected) as refused:
        inspect(body, "https://shop.example/a")
    assert refused.value.kind == kind, refused.value.reason


def test_pillow_is_loaded_with_our_decompression_bomb_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    from PIL import Image

    from workers.fetching.image_download import MAX_PIXELS, pillow

    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", None)  # Pillow's own check off
    assert pillow() is Image and Image.MAX_IMAGE_PIXELS == MAX_PIXELS
