"""Response bodies decoded from their Content-Encoding, bounded by what comes out.

httpx decodes each network chunk whole, so 16 KB of a zstd or stacked-gzip bomb
becomes gigabytes before a size check on the decoded chunks can refuse it. The
fetcher therefore reads the raw bytes (`Response.aiter_raw`, under the same byte
cap) and decodes them here, where every codec stops after `limit + 1` bytes of
output: a body that decodes to more than `limit` bytes is `too_large`, having
cost at most `limit + 1` bytes of memory.

One coding layer at most is decoded: a `Content-Encoding` naming two or more
(`gzip, gzip`) is refused (`bad_encoding`), as is one this module does not know.
No shop needs a second layer, and each one multiplies a bomb's ratio.
zstd frames may ask for a window of at most 8 MiB (RFC 9659's limit for HTTP).
"""

from __future__ import annotations

import zlib
from collections.abc import Callable

import brotli
import zstandard

__all__ = ["ACCEPT_ENCODING", "CODECS", "BodyTooLarge", "EncodingRefused", "codings",
           "decode", "refusal"]

#: the codings a fetch asks for: exactly those `decode` bounds
ACCEPT_ENCODING = "gzip, deflate, br, zstd"
#: RFC 9659: an HTTP zstd decoder needs no window over 8 MiB
ZSTD_MAX_WINDOW = 8 * 1024 * 1024


class EncodingRefused(Exception):
    """The response's Content-Encoding is one this fetcher does not decode."""


class BodyTooLarge(Exception):
    """The body decodes to more bytes than the limit."""


def codings(content_encoding: str) -> list[str]:
    """The coding layers a Content-Encoding header names, in the order applied."""
    names = (name.strip().lower() for name in content_encoding.split(","))
    return [name for name in names if name and name != "identity"]


def refusal(content_encoding: str) -> str | None:
    """Why a response with this Content-Encoding is not decoded (None: it is)."""
    layers = codings(content_encoding)
    if len(layers) > 1:
        return (f"{len(layers)} content-encoding layers ({', '.join(layers)});"
                " at most one is decoded")
    if layers and layers[0] not in CODECS:
        return f"unsupported content-encoding {layers[0]!r} (supported: {ACCEPT_ENCODING})"
    return None


def decode(raw: bytes, content_encoding: str, limit: int) -> bytes:
    """`raw` decoded from its single coding layer, never more than `limit` bytes.

    Raises `EncodingRefused` (see `refusal`), `BodyTooLarge`, or `ValueError`
    when the bytes are not valid for their coding.
    """
    reason = refusal(content_encoding)
    if reason is not None:
        raise EncodingRefused(reason)
    layers = codings(content_encoding)
    if not layers:
        body = raw
    else:
        try:
            body = CODECS[layers[0]](raw, limit + 1)
        except (zlib.error, brotli.error, zstandard.ZstdError) as error:
            raise ValueError(f"undecodable {layers[0]} body: {error}") from None
    if len(body) > limit:
        raise BodyTooLarge(f"decodes to more than {limit} bytes")
    return body


def _zlib(raw: bytes, cap: int, wbits: int) -> bytes:
    # max_length bounds the output; input past it stays in unconsumed_tail, unread
    return zlib.decompressobj(wbits).decompress(raw, cap)


def _gzip(raw: bytes, cap: int) -> bytes:
    return _zlib(raw, cap, zlib.MAX_WBITS | 16)


def _deflate(raw: bytes, cap: int) -> bytes:
    # "deflate" is zlib-wrapped by the RFC, raw deflate by some servers (as httpx reads it)
    try:
        return _zlib(raw, cap, zlib.MAX_WBITS)
    except zlib.error:
        return _zlib(raw, cap, -zlib.MAX_WBITS)


def _brotli(raw: bytes, cap: int) -> bytes:
    # the output buffer stops growing at the limit (brotli >= 1.2)
    body: bytes = brotli.Decompressor().process(raw, output_buffer_limit=cap)
    return body


def _zstd(raw: bytes, cap: int) -> bytes:
    decompressor = zstandard.ZstdDecompressor(max_window_size=ZSTD_MAX_WINDOW)
    reader = decompressor.stream_reader(raw, read_across_frames=True)
    parts: list[bytes] = []
    size = 0
    while size < cap:
        part = reader.read(cap - size)
        if not part:
            break
        parts.append(part)
        size += len(part)
    return b"".join(parts)


#: coding name -> (raw bytes, output cap) -> at most cap decoded bytes
CODECS: dict[str, Callable[[bytes, int], bytes]] = {
    "gzip": _gzip,
    "x-gzip": _gzip,
    "deflate": _deflate,
    "br": _brotli,
    "zstd": _zstd,
}
