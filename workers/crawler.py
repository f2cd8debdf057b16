"""The worker API: `await Crawler(...).crawl(task) -> CrawlOutcome`, never raising.

For each page: politeness first (robots, spacing, concurrency, pauses), then
fetch, archive the raw body, and read it (`workers.crawl_pages`: the adapter chosen by
the task or detected from the first page, extraction, pagination up to `max_pages`;
the bot API reads a bot's pages with the same). The crawler knows nothing about which
driver (embedded runner, Faust) called it.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import replace
from pathlib import Path

import httpx

from domain.values import CrawlOutcome, CrawlTask, ImageFailure, Policy
from workers.archive.packs import OpenPackIndex
from workers.archive.raw_archive import RawArchive, manifest
from workers.archive.writer import ArchiveWriter
from workers.crawl_pages import MAX_LINKS, MAX_PAGES, PageReader, failed
from workers.extraction.adapters.base import ExtractionError, Page, Request
from workers.extraction.adapters.registry import Registry
from workers.fetching.addresses import AddressGuard
from workers.fetching.egress import Egress
from workers.fetching.fetch import Decode, Fetcher, FetchLimits, decode_body
from workers.fetching.fetch_errors import FetchError
from workers.fetching.http import RobotsFetcher
from workers.fetching.image_download import DownloadedImage, ImageDownloader
from workers.fetching.politeness import Politeness, PolitenessConfig

__all__ = ["MAX_LINKS", "Crawler", "build_crawler"]

log = logging.getLogger(__name__)

_DEFAULT_LIMITS = FetchLimits()
_DEFAULT_CONFIG = PolitenessConfig()


class Crawler:
    """Crawls one task at a time per call; calls may run concurrently."""

    def __init__(
        self,
        client: httpx.AsyncClient,
        politeness: Politeness,
        archive: RawArchive,
        adapters: Registry,
        max_pages: int = MAX_PAGES,
        limits: FetchLimits = _DEFAULT_LIMITS,
        decode: Decode = decode_body,
        clock: Callable[[], float] = time.monotonic,
        guard: AddressGuard | None = None,
        max_links: int = MAX_LINKS,
        egress: Egress | None = None,
    ) -> None:
        #: the proxy pool stores with an egress policy crawl through (None: no pool)
        self._egress = egress
        self._guard = guard or AddressGuard()
        self._fetcher = Fetcher(client, limits, decode, guard=self._guard)
        self._politeness = politeness
        self._images = ImageDownloader.on(client, self._guard, politeness)
        self._archive = archive
        self._reader = PageReader(adapters, max_pages, max_links)
        self._clock = clock
        # pages are archived off the event loop, on the writer's thread, in groups
        self._writer = ArchiveWriter(archive)

    @property
    def egress(self) -> Egress | None:
        """The egress proxy pool and its clients (None: this crawler has none)."""
        return self._egress

    def close(self) -> None:
        """End the archive's thread (after the writes in progress) and close the archive."""
        self._writer.close()
        self._archive.close()

    async def crawl(self, task: CrawlTask) -> CrawlOutcome:
        """The outcome of crawling `task`; failures are values, never raised."""
        started = self._clock()
        try:
            outcome = await self._crawl(task)
        except Exception as error:  # a failure of the world, or a bug: never the worker's end
            if not isinstance(error, (FetchError, ExtractionError)):
                log.exception("crawl of job %s (%s) failed unexpectedly", task.job_id, task.url)
            outcome = failed(task, error)
        return replace(outcome, duration=self._clock() - started)

    async def fetch_image(self, url: str, policy: Policy) -> DownloadedImage | ImageFailure:
        """A product image under `policy` (its store's), through the same address guard
        and politeness as the pages; failures are values, never raised."""
        if policy.egress is None or self._egress is None:
            return await self._images.fetch(url, policy)
        try:
            async with self._egress.route(policy, url):
                return await self._images.fetch(url, policy)
        except FetchError as error:  # no proxy usable
            return ImageFailure(url, error.kind, error.message)

    async def _crawl(self, task: CrawlTask) -> CrawlOutcome:
        crawl = self._reader.begin(task)
        request: Request | None = crawl.first
        while request is not None:
            page = await self._fetch(request, task)
            request = crawl.take(page, await self._writer.put(page.body))
        # one page is its own ref; several store a manifest
        refs = crawl.refs
        raw_ref = refs[0] if len(refs) == 1 else await self._writer.put(manifest(refs))
        return crawl.outcome(raw_ref)

    async def _fetch(self, request: Request, task: CrawlTask) -> Page:
        # before politeness: a refused address gets no robots.txt request either
        await self._guard.check(request.url, request.method)
        return await self._fetch_routed(request, task.policy)

    async def _fetch_routed(self, request: Request, policy: Policy) -> Page:
        """The fetch, through the egress proxy when the store's policy asks for one."""
        def fetch() -> Awaitable[Page]:
            return self._fetcher.fetch(request, self._politeness.user_agent(policy),
                                       lambda url: self._politeness.slot(url, policy))
        if policy.egress is None:
            return await fetch()
        if self._egress is None:
            raise FetchError("connect", f"{request.method} {request.url}: the store needs an "
                             "egress proxy and this worker has no proxy pool")
        async with self._egress.route(policy, request.url):
            return await fetch()


def build_crawler(
    client: httpx.AsyncClient,
    data_dir: Path | str,
    archive_index: OpenPackIndex,
    adapters: Registry,
    *,
    config: PolitenessConfig = _DEFAULT_CONFIG,
    limits: FetchLimits = _DEFAULT_LIMITS,
    max_pages: int = MAX_PAGES,
    guard: AddressGuard | None = None,
    egress: Egress | None = None,
    max_links: int = MAX_LINKS,
) -> Crawler:
    """A Crawler with real time, robots.txt over `client` and the data dir's archive
    (its index opened by `archive_index`, the composition root's adapter).

    `guard` must be the one `client` was built with (`build_client(guard=...)`)."""
    guard = guard or AddressGuard()
    politeness = Politeness(RobotsFetcher.on(client, guard), time.monotonic, asyncio.sleep,
                            config)
    return Crawler(client, politeness, RawArchive(data_dir, archive_index), adapters, max_pages, limits,
                   guard=guard, egress=egress, max_links=max_links)
