"""Image steps of several drivers at once, on both backends (real HTTP on loopback): a URL
another step has claimed is left to it, a claim whose holder died runs out, and the
distributed image agent's body downloads what product events name, once, through the
same step (a redelivered batch downloads nothing)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any

from http_fixtures import serving
from test_images import T0, crawler, events_of, image_server, record_products

from ledger.bootstrap import Ledger
from runtime.clock import SimulatedClock
from runtime.db_thread import DbThread
from runtime.image_step import ImageBatch, ImageStep, image_requests


def stored(ledger: Ledger, product_ids: list[str]) -> list[str]:
    return [p for p in product_ids
            if [kind for kind, _ in events_of(ledger, p)] == ["Product.ImageStored"]]


def test_a_url_claimed_by_another_step_is_left_to_it_until_the_claim_runs_out(
        ledger: Ledger, tmp_path: Path) -> None:
    server = image_server()
    ids = record_products(ledger, server.url(""), {
        "a": server.url("/a.png"), "a again": server.url("/a.png"), "b": server.url("/b.jpg")})
    clock = SimulatedClock(T0 + timedelta(hours=1))
    # a step in another process, downloading /a.png; claims last 60 s here (600 s live)
    other = ledger.tables.claims(ttl=60)
    assert other.claim([server.url("/a.png")], clock.now()).urls == {server.url("/a.png")}

    async def run() -> list[ImageBatch]:
        db = DbThread(1)
        try:
            async with serving(server), crawler(tmp_path) as found:
                step = ImageStep(ledger, found, clock, db, claims=ledger.tables.claims(ttl=60))
                first = await step.run()  # leaves /a.png to its holder, and stops
                assert stored(ledger, list(ids.values())) == [ids["b"]]
                assert server.paths() == ["/b.jpg"]
                clock.advance(61)  # the holder died: its claim ran out
                return [first, await step.run(), await step.run()]
        finally:
            db.close()

    first, second, third = asyncio.run(run())
    assert (first.downloads, first.stored) == (1, 1)
    assert (second.downloads, second.stored) == (1, 2)  # one download for both products
    assert (third.downloads, third.recorded) == (0, 0)
    assert sorted(server.paths()) == ["/a.png", "/b.jpg"]
    assert stored(ledger, list(ids.values())) == list(ids.values())
    assert other.held() == {}  # taken over by the step, released after recording


def test_the_image_agent_body_downloads_what_product_events_name_once(
        ledger: Ledger, tmp_path: Path) -> None:
    from runtime.components import Components
    from streams.agents import image_batch
    from streams.resources import Resources, WorkerOptions

    server = image_server()
    ids = record_products(ledger, server.url(""), {
        "a": server.url("/a.png"), "a again": server.url("/a.png"), "none": None})
    envelopes = ledger.source.read(0, 10_000)
    assert sorted(url for _, _, url in image_requests(envelopes)) == [server.url("/a.png")] * 2

    @asynccontextmanager
    async def open_crawler() -> AsyncIterator[Any]:
        async with crawler(tmp_path) as found:
            yield found

    components = Components(open_ledger=lambda: ledger, open_crawler=open_crawler,
                            data_dir=ledger.data_dir)
    clock = SimulatedClock(T0 + timedelta(hours=1))

    async def go() -> list[ImageBatch]:
        res = Resources(components, WorkerOptions(db_threads=1), clock=clock)
        try:  # a batch, then the same batch redelivered (at least once)
            async with serving(server):
                return [await image_batch(res, envelopes), await image_batch(res, envelopes)]
        finally:
            await res._stack.aclose()
            res.db.close()

    first, again = asyncio.run(go())
    assert (first.downloads, first.stored, again.downloads, again.recorded) == (1, 2, 0, 0)
    assert server.paths() == ["/a.png"]
    assert stored(ledger, [ids["a"], ids["a again"]]) == [ids["a"], ids["a again"]]
