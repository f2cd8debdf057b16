"""Image bodies for the image tests: real ones, and hostile ones built byte by byte."""

from __future__ import annotations

import io
import struct
import zlib

from PIL import Image, ImageDraw


def picture(width: int = 64, height: int = 48, fmt: str = "PNG", alpha: bool = False) -> bytes:
    """A small real image: a coloured field with a disc (and transparency if `alpha`)."""
    mode = "RGBA" if alpha else "RGB"
    image = Image.new(mode, (width, height), (30, 120, 200, 0 if alpha else 255))
    ImageDraw.Draw(image).ellipse((width // 4, height // 4, 3 * width // 4, 3 * height // 4),
                                  fill=(240, 200, 40, 255))
    out = io.BytesIO()
    image.save(out, fmt)
    return out.getvalue()


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def png_declaring(width: int, height: int) -> bytes:
    """A PNG of a few hundred bytes whose header declares `width` x `height` pixels: a
    decompression bomb (its one row of data would be inflated to the whole size)."""
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    data = zlib.compress(b"\x00" * 1024, 9)
    return b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", header) + _chunk(b"IDAT", data) + _chunk(b"IEND", b"")


def truncated(body: bytes) -> bytes:
    """The first half of an image: a valid header, data cut short."""
    return body[: len(body) // 2]
