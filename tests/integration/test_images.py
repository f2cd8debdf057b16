"""Product images end to end on both backends: a loopback image server (real HTTP), the
image step and the embedded runner, the content-addressed store, the recorded events,
and `GET /images/{sha}` with the dashboard's product page."""

from __future__ import annotations

import asyncio
import hashlib
import io
import re
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
from aiohttp import web
from http_fixtures import Handler, RecordingServer, serving
from image_fixtures import picture, png_declaring, truncated
from PIL import Image

from domain.values import CrawlSuccess, CrawlTask, ImageFailure, Observation, Offer
from eventstore.pack_index import open_pack_index
from ledger.bootstrap import Ledger
from ledger.drivers.embedded import EmbeddedRunner
from runtime.clock import SimulatedClock
from runtime.db_thread import DbThread
from runtime.image_step import ImageStep, ImageStore
from workers.crawler import Crawler, build_crawler
from workers.extraction import adapters
from workers.fetching.addresses import AddressGuard
from workers.fetching.http import build_client

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "e2e"))
from test_api import bearer  # noqa: E402
from test_api import serving as serving_api  # noqa: E402

T0 = datetime(2026, 3, 1, 8, 0, tzinfo=UTC)
PNG, JPEG = picture(64, 48, "PNG"), picture(80, 60, "JPEG")


def _serve(data: bytes, content_type: str) -> Handler:
    async def handler(_: web.Request) -> web.StreamResponse:
        return web.Response(body=data, content_type=content_type)
    return handler


def image_server() -> RecordingServer:
    server = RecordingServer()
    for path, data, content_type in (
            ("/a.png", PNG, "image/png"), ("/same-bytes.png", PNG, "image/png"),
            ("/b.jpg", JPEG, "image/jpeg"),
            ("/bomb.png", png_declaring(100_000, 100_000), "image/png"),
            ("/fake.png", b"<html>hello</html>", "image/png"),
            ("/page.png", PNG, "text/html"),
            ("/cut.jpg", truncated(picture(300, 300, "JPEG")), "image/jpeg")):
        server.route(path, _serve(data, content_type))
    return server


def record_products(ledger: Ledger, base_url: str, images: dict[str, str | None]) -> dict[str, str]:
    """One product per name with that image URL; returns name -> product id."""
    app = ledger.app
    store = app.register_store(name="Shop", base_url=base_url, platform="shopify", now=T0,
                               crawl_delay=0, respect_robots=False)
    job = app.schedule_job(kind="product_page", url=f"{base_url}/p", now=T0, store_id=store)
    task = app.lease(job, "w", 300, T0)
    app.record_success(job, task.lease_id, CrawlSuccess(
        200, task.url, "shopify", "shopify/1", "h1", observations=tuple(
            Observation(provider_product_id=name, name=name, image_url=url,
                        offers=(Offer("one", None, "EUR"),))
            for name, url in images.items())), T0)
    ledger.catch_up()
    return {r["name"]: r["product_id"] for r in ledger.read.products()}


@asynccontextmanager
async def crawler(data_dir: Path) -> AsyncIterator[Crawler]:
    guard = AddressGuard(["127.0.0.0/8"])  # loopback allowed on purpose; 10/8 is not
    async with build_client(guard=guard) as client:
        built = build_crawler(client, data_dir, open_pack_index, adapters.REGISTRY, guard=guard)
        try:
            yield built
        finally:
            built.close()


def events_of(ledger: Ledger, product_id: str) -> list[tuple[str, dict[str, object]]]:
    return [(e.event_type, e.payload) for e in ledger.source.read(0, 10_000)
            if e.stream_id == product_id and e.event_type.startswith("Product.Image")]


def test_images_are_checked_stored_once_and_recorded(ledger: Ledger, tmp_path: Path) -> None:
    server = image_server()
    url = server.url
    ids = record_products(ledger, server.url(""), {
        "a": url("/a.png"), "a again": url("/a.png"), "same bytes": url("/same-bytes.png"),
        "jpeg": url("/b.jpg"), "bomb": url("/bomb.png"), "fake": url("/fake.png"),
        "html": url("/page.png"), "cut": url("/cut.jpg"), "private": "http://10.1.2.3/x.png",
        "none": None})
    clock = SimulatedClock(T0 + timedelta(hours=1))

    async def run() -> tuple[object, object]:
        db = DbThread(1)
        try:
            async with serving(server), crawler(tmp_path) as found:
                step = ImageStep(ledger, found, clock, db, concurrency=3)
                return await step.run(), await step.run()
        finally:
            db.close()

    first, second = asyncio.run(run())
    assert first.downloads == 8 and first.stored == 4 and first.failed == 5  # type: ignore[attr-defined]
    assert first.new_files == 2  # type: ignore[attr-defined]
    assert second.downloads == 0 and second.recorded == 0  # type: ignore[attr-defined]
    assert server.paths().count("/a.png") == 1  # one download for both products
    assert "/x.png" not in server.paths()
    kinds = {}
    for name, product_id in ids.items():
        recorded = events_of(ledger, product_id)
        if name == "none":
            assert recorded == []
            continue
        assert len(recorded) == 1, name
        kind, payload = recorded[0]
        kinds[name] = payload["sha256"] if kind == "Product.ImageStored" else payload["kind"]
        assert payload["at"] is not None
    png_sha, jpeg_sha = hashlib.sha256(PNG).hexdigest(), hashlib.sha256(JPEG).hexdigest()
    assert kinds == {"a": png_sha, "a again": png_sha, "same bytes": png_sha, "jpeg": jpeg_sha,
                     "bomb": "decompression_bomb", "fake": "not_an_image",
                     "html": "wrong_content_type", "cut": "truncated",
                     "private": "blocked_address"}
    store = ImageStore(ledger.data_dir)
    assert store.read(png_sha) == PNG and store.read(jpeg_sha) == JPEG
    assert sorted(p.name for p in (ledger.data_dir / "images" / "sha256").rglob("*")
                  if p.is_file()) == sorted([png_sha, jpeg_sha])
    stored = dict(events_of(ledger, ids["jpeg"]))["Product.ImageStored"]
    assert (stored["width"], stored["height"], stored["format"], stored["bytes"]) == (
        80, 60, "JPEG", len(JPEG))
    # the read model agrees; a product's image is tried again only when its URL changes
    ledger.catch_up()
    assert ledger.read.image_counts() == {"stored": 4, "failed": 5, "none": 1}
    assert ledger.read.product_image(ids["a"])["sha256"] == png_sha  # type: ignore[index]
    assert not ledger.app.record_image(ids["a"], ImageFailure(url("/a.png"), "x", "again"),
                                       clock.now())


def test_a_new_image_url_is_tried_again(ledger: Ledger) -> None:
    ids = record_products(ledger, "https://shop.example", {"a": "https://cdn.example/1.png"})
    product = ids["a"]
    assert ledger.app.record_image(product, ImageFailure("https://cdn.example/1.png", "http_4xx",
                                                         "404"), T0)
    assert ledger.app.images_pending([(product, "https://cdn.example/1.png")]) == []
    app = ledger.app
    job = app.schedule_job(kind="product_page", url="https://shop.example/q", now=T0,
                           store_id=ledger.read.products()[0]["store_id"])
    task = app.lease(job, "w", 300, T0)
    app.record_success(job, task.lease_id, CrawlSuccess(
        200, task.url, "shopify", "shopify/1", "h2", observations=(Observation(
            provider_product_id="a", name="a", image_url="https://cdn.example/2.png"),)), T0)
    ledger.catch_up()
    assert ledger.read.pending_images(10)[0]["image_url"] == "https://cdn.example/2.png"
    assert ledger.app.images_pending([(product, "https://cdn.example/2.png")]) == [
        (product, "https://cdn.example/2.png")]
    # an outcome for the URL it no longer has records nothing
    assert not ledger.app.record_image(product, ImageFailure("https://cdn.example/1.png", "x",
                                                             "late"), T0)


class OneProductCrawler:
    """Stands in for the page crawler: every crawl sees one product with an image."""

    def __init__(self, image_url: str) -> None:
        self.image_url = image_url

    async def crawl(self, task: CrawlTask) -> CrawlSuccess:
        return CrawlSuccess(200, task.url, "shopify", "shopify/1", "h", observations=(
            Observation(provider_product_id="p1", name="Pictured", image_url=self.image_url,
                        offers=(Offer("one", None, "EUR"),)),))


def test_the_embedded_runner_fetches_new_images_and_they_are_served(
        ledger: Ledger, tmp_path: Path) -> None:
    server = image_server()
    app = ledger.app
    store = app.register_store(name="Shop", base_url=server.url(""), platform="shopify",
                               now=T0, crawl_delay=0, respect_robots=False)
    app.schedule_job(kind="product_page", url=server.url("/p"), now=T0, store_id=store)
    clock = SimulatedClock(T0)

    async def run() -> None:
        async with serving(server), crawler(tmp_path) as images:
            runner = EmbeddedRunner(ledger, OneProductCrawler(server.url("/b.jpg")), clock,
                                    concurrency=2, tick_seconds=0.05, images=images)
            stats = await runner.run(until_idle=True)
            assert stats.images_stored == 1

    asyncio.run(run())
    assert server.paths().count("/b.jpg") == 1
    product_id = ledger.read.products()[0]["product_id"]
    sha = hashlib.sha256(JPEG).hexdigest()
    assert ledger.read.product_image(product_id)["sha256"] == sha  # type: ignore[index]

    with serving_api(ledger) as (base, secrets), httpx.Client(base_url=base) as http:
        read = bearer(secrets["read"])
        assert http.get(f"/images/{sha}").status_code == 401
        assert http.get(f"/images/{sha}", headers=bearer(secrets["bot"])).status_code == 403
        original = http.get(f"/images/{sha}", headers=read)
        assert original.status_code == 200 and original.content == JPEG
        assert original.headers["content-type"] == "image/jpeg"
        assert "immutable" in original.headers["cache-control"]
        small = http.get(f"/images/{sha}?w=40&h=40&fit=contain&format=png&gray=1", headers=read)
        assert small.status_code == 200 and small.headers["content-type"] == "image/png"
        assert Image.open(io.BytesIO(small.content)).size == (40, 40)
        again = http.get(f"/images/{sha}?w=40&h=40&fit=contain&format=png&gray=1",
                         headers={**read, "If-None-Match": small.headers["etag"]})
        assert again.status_code == 304
        assert http.get(f"/images/{'0' * 64}", headers=read).status_code == 404
        for hostile in ("w=0", "w=4001", "h=-1", "q=0", "q=101", "fit=crop", "format=gif",
                        "blur=101", "blur=nan", "blur=inf", "gray=maybe", "w=1e9", "w=abc"):
            refused = http.get(f"/images/{sha}?{hostile}", headers=read)
            assert refused.status_code == 422, hostile
            assert refused.headers["content-type"] == "application/problem+json"
        for bad in ("not-a-sha", "A" * 64, "0" * 63):
            assert http.get(f"/images/{bad}", headers=read).status_code == 422
        # the dashboard's product page shows it from this server, through the session
        opened = http.post("/login", data={"token": secrets["read"], "next": "/"})
        assert opened.status_code == 303
        page = http.get(f"/products/{product_id}")
        assert page.status_code == 200
        assert f'src="/images/{sha}?w=320"' in page.text
        sources = re.findall(r'(?:src|href)="([^"]+)"', page.text)
        # local paths only ("data:," is the empty icon: it asks the browser for nothing)
        assert sources and all(s == "data:," or (s.startswith(("/", "#")) and not s.startswith("//"))
                               for s in sources)
        shown = http.get(f"/images/{sha}?w=320")  # with the session cookie
        assert shown.status_code == 200 and Image.open(io.BytesIO(shown.content)).width == 320
    cached = list((ledger.data_dir / "images" / "variants").rglob("*.*"))
    assert len(cached) == 2  # the two variants asked for
