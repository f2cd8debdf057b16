"""Decompression bombs: a body is decoded only up to its byte cap, in every codec, and a
body of more than one coding layer is refused (`workers.fetching.content_encoding`)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import tracemalloc
import zlib
from pathlib import Path

import brotli
import pytest
import zstandard
from aiohttp import web
from decompression_bombs import MIB, gzip_of_zeros, zstd_bomb
from http_fixtures import RecordingServer, serving

from workers.extraction.adapters.base import Request
from workers.fetching.addresses import AddressGuard
from workers.fetching.content_encoding import ACCEPT_ENCODING, BodyTooLarge, EncodingRefused, decode
from workers.fetching.fetch import Fetcher
from workers.fetching.http import build_client

HERE = Path(__file__).resolve().parent
TESTS = HERE.parent


def _deflate_of_zeros(total_mib: int) -> bytes:
    """zlib-wrapped deflate (RFC 9110's "deflate") of `total_mib` MiB of zeros."""
    member = gzip_of_zeros(total_mib)
    raw = member[10:-8]
    adler = 1
    for _ in range(total_mib):
        adler = zlib.adler32(b"\0" * MIB, adler)
    return b"\x78\x9c" + raw + adler.to_bytes(4, "big")


def _brotli_of_zeros(total_mib: int) -> bytes:
    compressor = brotli.Compressor(quality=5)
    block = b"\0" * MIB
    return b"".join([compressor.process(block) for _ in range(total_mib)]
                    + [compressor.finish()])


BOMBS = {
    "gzip": lambda: gzip_of_zeros(512),
    "deflate": lambda: _deflate_of_zeros(512),
    "raw deflate": lambda: gzip_of_zeros(512)[10:-8],
    "br": lambda: _brotli_of_zeros(512),
    "zstd": lambda: zstd_bomb(512),
}


@pytest.mark.parametrize("name", list(BOMBS))
def test_every_codec_stops_decoding_just_past_the_limit(name: str) -> None:
    bomb = BOMBS[name]()
    coding = name.split()[-1]
    tracemalloc.start()
    try:
        with pytest.raises(BodyTooLarge):
            decode(bomb, coding, MIB)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 4 * MIB, f"{name}: {peak / MIB:.1f} MiB held to refuse a 512 MiB bomb"


@pytest.mark.parametrize("name", list(BOMBS))
def test_every_codec_decodes_a_body_within_the_limit(name: str) -> None:
    text = "<p>Crème brûlée 12,50 €</p>".encode() * 1000
    encoders = {
        "gzip": lambda b: zlib.compress(b, wbits=31),
        "deflate": zlib.compress,
        "raw deflate": lambda b: zlib.compress(b, wbits=-15),
        "br": brotli.compress,
        "zstd": zstandard.ZstdCompressor().compress,
    }
    assert decode(encoders[name](text), name.split()[-1], len(text)) == text


@pytest.mark.parametrize("header", ["gzip, gzip", "gzip,br", "deflate, zstd", "compress",
                                    "x-bomb"])
def test_stacked_or_unknown_codings_are_refused(header: str) -> None:
    with pytest.raises(EncodingRefused):
        decode(zlib.compress(b"x", wbits=31), header, MIB)


def test_a_zstd_frame_asking_for_a_window_over_8_mib_is_refused() -> None:
    params = zstandard.ZstdCompressionParameters(window_log=24, write_content_size=False)
    compressor = zstandard.ZstdCompressor(compression_params=params).compressobj()
    frame = compressor.compress(os.urandom(64)) + compressor.flush()
    assert zstandard.get_frame_parameters(frame).window_size == 16 * MIB
    with pytest.raises(ValueError, match="undecodable zstd"):
        decode(frame, "zstd", MIB)


def test_bombs_through_the_production_client_are_refused_in_bounded_memory() -> None:
    """Page, robots.txt and image fetches of three 1 GiB bombs (gzip inside gzip: 2 KB on
    the wire; zstd: 32 KB; gzip: 1 MB) in a child process whose peak memory is measured."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(TESTS.parent), str(TESTS)])}
    run = subprocess.run([sys.executable, str(HERE / "decompression_bombs.py")], env=env,
                         capture_output=True, text=True, timeout=240, check=False)
    assert run.returncode == 0, run.stderr[-2000:]
    report = json.loads(run.stdout)
    results = report["results"]
    stacked = results["gzip, gzip"]
    assert stacked["page"]["kind"] == stacked["image"]["kind"] == "bad_encoding"
    assert "2 content-encoding layers (gzip, gzip)" in stacked["page"]["message"]
    assert stacked["robots"]["status"] is None  # unreachable: the origin is disallowed
    assert "content-encoding layers" in stacked["robots"]["detail"]
    for name in ("zstd", "gzip"):
        assert results[name]["page"]["kind"] == results[name]["image"]["kind"] == "too_large"
        assert results[name]["robots"]["status"] is None
    assert "524288-byte limit" in results["zstd"]["robots"]["detail"]
    assert report["peak_growth_mib"] < 100, report


def test_the_fetcher_asks_only_for_the_codings_it_bounds() -> None:
    server = RecordingServer()
    asked: list[str] = []

    async def handler(request: web.Request) -> web.StreamResponse:
        asked.append(request.headers.get("Accept-Encoding", ""))
        return web.Response(text="ok")

    server.route("/p", handler)
    loopback = AddressGuard(["127.0.0.0/8"])

    async def scenario() -> None:
        async with serving(server), build_client(guard=loopback) as client:
            fetcher = Fetcher(client, guard=loopback)
            headers = {"accept-encoding": "gzip, gzip, compress"}
            await fetcher.fetch(Request(server.url("/p"), headers=headers), "t")

    asyncio.run(scenario())
    assert asked == [ACCEPT_ENCODING]


def test_the_embedded_runner_refuses_bomb_pages_and_robots_in_bounded_memory(
        tmp_path: Path) -> None:
    """The crawl path: product pages of each bomb and a store whose robots.txt is a
    gzip-in-gzip bomb, crawled by the embedded runner after an ordinary shop."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(TESTS.parent), str(TESTS)])}
    run = subprocess.run([sys.executable, str(HERE / "decompression_bombs.py"), "runner",
                          str(tmp_path)], env=env, capture_output=True, text=True,
                         timeout=240, check=False)
    assert run.returncode == 0, run.stderr[-2000:]
    report = json.loads(run.stdout)
    assert report["jobs"] == {
        "shop": ["succeeded", None],
        "robots": ["failed", "robots_disallowed"],  # robots.txt unreachable: disallowed
        "gzip, gzip": ["failed", "bad_encoding"],
        "zstd": ["failed", "too_large"],
        "gzip": ["failed", "too_large"],
    }, report
    assert report["peak_growth_mib"] < 100, report
