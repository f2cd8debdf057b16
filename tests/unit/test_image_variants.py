"""Resized variants (api.image_routes.render): every parameter combination gives a decodable
image of the asked format within the asked size bounds."""

from __future__ import annotations

import io
import itertools

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from image_fixtures import picture
from PIL import Image

from api.image_routes import MAX_SIDE, Variant, avif_supported, render, target_size

FITS = ("cover", "contain", "fill", "inside", "outside")
FORMATS = ("webp", "jpeg", "png", "avif") if avif_supported() else ("webp", "jpeg", "png")
PILLOW = {"webp": "WEBP", "jpeg": "JPEG", "png": "PNG", "avif": "AVIF"}
SOURCES = {"wide png with alpha": picture(90, 40, "PNG", alpha=True),
           "tall jpeg": picture(30, 70, "JPEG"), "gif": picture(20, 20, "GIF")}


def check(body: bytes, variant: Variant, source: tuple[int, int]) -> None:
    rendered, fmt = render(body, variant)
    image = Image.open(io.BytesIO(rendered))
    image.load()
    assert fmt == (variant.format or fmt) and image.format == PILLOW[fmt]
    width, height = image.size
    assert 1 <= width <= MAX_SIDE and 1 <= height <= MAX_SIDE
    w, h = variant.width, variant.height
    if w is not None and h is not None:
        if variant.fit in ("cover", "contain", "fill"):
            assert (width, height) == (w, h)
        elif variant.fit == "inside":
            assert width <= w and height <= h and (width == w or height == h)
        else:  # outside: covers the box unless the 4000-pixel cap scaled it down
            assert (width >= w and height >= h) or max(width, height) == MAX_SIDE
    elif w is not None:
        assert width == w or max(width, height) == MAX_SIDE
    elif h is not None:
        assert height == h or max(width, height) == MAX_SIDE
    else:
        assert (width, height) == source
    if variant.gray:
        assert image.mode in ("L", "LA") or _looks_gray(image)


def _looks_gray(image: Image.Image) -> bool:
    data = image.convert("RGB").tobytes()  # lossy formats: within a few levels
    return all(max(data[i:i + 3]) - min(data[i:i + 3]) <= 12 for i in range(0, len(data), 3))


# every fit x format x box shape, with blur and gray alternating
TABLE = [
    (fit, fmt, box, i % 2 == 0, 2.5 if i % 3 == 0 else None)
    for i, (fit, fmt, box) in enumerate(itertools.product(
        FITS, FORMATS, [(50, 50), (120, 30), (10, 90), (50, None), (None, 25), (None, None)]))
]


@pytest.mark.parametrize("fit, fmt, box, gray, blur", TABLE)
def test_every_fit_format_and_box(fit: str, fmt: str, box: tuple[int | None, int | None],
                                  gray: bool, blur: float | None) -> None:
    for body, size in ((SOURCES["wide png with alpha"], (90, 40)), (SOURCES["tall jpeg"], (30, 70))):
        check(body, Variant.of(box[0], box[1], fit, fmt, 60, blur, gray), size)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(w=st.none() | st.integers(1, 300), h=st.none() | st.integers(1, 300),
       fit=st.sampled_from(FITS), fmt=st.none() | st.sampled_from(FORMATS),
       q=st.none() | st.integers(1, 100), blur=st.none() | st.floats(0, 100),
       gray=st.booleans(), source=st.sampled_from(sorted(SOURCES)))
def test_sampled_parameters(w: int | None, h: int | None, fit: str, fmt: str | None,
                            q: int | None, blur: float | None, gray: bool, source: str) -> None:
    body = SOURCES[source]
    size = Image.open(io.BytesIO(body)).size
    variant = Variant.of(w, h, fit, fmt, q, blur, gray)
    rendered, out = render(body, variant)
    if fmt is None:  # the stored format, a GIF becomes PNG
        assert out == {"PNG": "png", "JPEG": "jpeg", "GIF": "png"}[Image.open(io.BytesIO(body)).format or ""]
    check(body, variant, size)


def test_no_side_exceeds_the_cap() -> None:
    assert target_size(1, 1000, Variant.of(4000, None, "cover", None, None, None, False)) == (4, 4000)
    assert target_size(1000, 1, Variant.of(4000, 4000, "outside", None, None, None, False)) == (4000, 4)
    assert target_size(10, 20, Variant.of(4000, 4000, "inside", None, None, None, False)) == (2000, 4000)
    body = picture(2, 200, "PNG")
    check(body, Variant.of(3000, None, "cover", "png", None, None, False), (2, 200))


def test_equal_parameters_share_a_key() -> None:
    one = Variant.of(100, None, "fill", "png", 50, 0.0, False)  # fit, q, blur 0: no effect
    two = Variant.of(100, None, "cover", "png", None, None, False)
    assert one.key("JPEG") == two.key("JPEG")
    assert one.key("JPEG") != Variant.of(100, None, "fill", "webp", 50, None, False).key("JPEG")
