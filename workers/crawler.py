"""The worker API: `await Crawler(...).crawl(task) -> CrawlOutcome`, never raising.

For each page: politeness first (robots, spacing, concurrency, pauses), then
fetch, archive the raw body, extract; pagination (`next_request`) repeats that
up to `max_pages`. The adapter is chosen by the task (`adapters.for_task`), or,
when the task names no platform, detected from the first page's content. The
crawler knows nothing about which driver (embedded runner, Faust) called it.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

import httpx

from domain.values import CrawlFailure, CrawlOutcome, CrawlSuccess, CrawlTask, ImageFailure, Policy
from workers.adapters.base import Adapter, Extraction, ExtractionError, Page, Request
from workers.adapters.registry import Registry
from workers.addresses import AddressGuard
from workers.archive import RawArchive, content_hash, manifest
from workers.archive_writer import ArchiveWriter
from workers.egress import Egress
from workers.errors import FetchError, failure
from workers.fetch import Decode, Fetcher, FetchLimits, decode_body
from workers.http import RobotsFetcher
from workers.images import DownloadedImage, ImageDownloader
from workers.politeness import Politeness, PolitenessConfig

__all__ = ["Crawler", "build_crawler", "build_outcome"]

log = logging.getLogger(__name__)

_DEFAULT_LIMITS = FetchLimits()
_DEFAULT_CONFIG = PolitenessConfig()
_NEEDS_PRODUCTS = frozenset({"catalog", "product_page"})
#: links (feeds) and stores (locators) one crawl hands on; the rest are only counted
MAX_LINKS = 10_000


@dataclass
class _Pages:
    """What the pages of one crawl add up to."""

    pages: list[Page] = field(default_factory=list)
    refs: list[str] = field(default_factory=list)
    extractions: list[Extraction] = field(default_factory=list)


class Crawler:
    """Crawls one task at a time per call; calls may run concurrently."""

    def __init__(
        self,
        client: httpx.AsyncClient,
        politeness: Politeness,
        archive: RawArchive,
        adapters: Registry,
        max_pages: int = 200,
        limits: FetchLimits = _DEFAULT_LIMITS,
        decode: Decode = decode_body,
        clock: Callable[[], float] = time.monotonic,
        guard: AddressGuard | None = None,
        max_links: int = MAX_LINKS,
        egress: Egress | None = None,
    ) -> None:
        self._max_links = max_links
        #: the proxy pool stores with an egress policy crawl through (None: no pool)
        self._egress = egress
        self._guard = guard or AddressGuard()
        self._fetcher = Fetcher(client, limits, decode, guard=self._guard)
        self._politeness = politeness
        self._images = ImageDownloader.on(client, self._guard, politeness)
        self._archive = archive
        self._adapters = adapters
        self._max_pages = max_pages
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
        except FetchError as error:
            outcome = gone(task, error) or error.to_failure()
        except ExtractionError as error:
            outcome = failure("parse_error", f"{task.url}: {error}")
        except Exception as error:  # a bug must not take the worker down
            log.exception("crawl of job %s (%s) failed unexpectedly", task.job_id, task.url)
            outcome = failure("worker_error", f"{task.url}: {type(error).__name__}: {error}")
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
        crawl = _Pages()
        adapter = self._adapters.for_task(task)
        first = adapter.start(task) if adapter else Request(task.url)
        page = await self._fetch(first, task, crawl)
        if adapter is None:
            adapter = self._detect(page)
        extraction = self._extract(adapter, page, task, crawl)
        seen = {request_key(first)}
        while extraction.next_request is not None:
            request = extraction.next_request
            self._check_pagination(request, seen, len(crawl.pages))
            page = await self._fetch(request, task, crawl)
            extraction = self._extract(adapter, page, task, crawl)
        # one page is its own ref; several store a manifest
        raw_ref = (crawl.refs[0] if len(crawl.refs) == 1
                   else await self._writer.put(manifest(crawl.refs)))
        return self._outcome(task, adapter, crawl, raw_ref)

    async def _fetch(self, request: Request, task: CrawlTask, crawl: _Pages) -> Page:
        policy = task.policy
        # before politeness: a refused address gets no robots.txt request either
        await self._guard.check(request.url, request.method)
        page = await self._fetch_routed(request, policy)
        crawl.refs.append(await self._writer.put(page.body))
        crawl.pages.append(page)
        return page

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

    def _detect(self, page: Page) -> Adapter:
        adapter = self._adapters.detect(page)
        if adapter is None:
            raise ExtractionError(f"no adapter recognises the content at {page.url}")
        return adapter

    @staticmethod
    def _extract(adapter: Adapter, page: Page, task: CrawlTask, crawl: _Pages) -> Extraction:
        try:
            extraction = adapter.extract(page, task)
        except ExtractionError:
            raise
        except Exception as error:
            # an adapter tripping over a page is a parse failure of that page
            log.warning("adapter %s crashed on %s", adapter.name, page.url, exc_info=True)
            raise ExtractionError(
                f"{adapter.name} could not read {page.url}: {type(error).__name__}: {error}"
            ) from error
        crawl.extractions.append(extraction)
        return extraction

    def _check_pagination(self, request: Request, seen: set[str], pages: int) -> None:
        if pages >= self._max_pages:
            # a truncated catalog would wrongly report products as gone
            raise FetchError(
                "too_large", f"{request.url}: pagination exceeds max_pages={self._max_pages}",
                retryable=False,
            )
        key = request_key(request)
        if key in seen:
            raise ExtractionError(f"pagination loop: {request.method} {request.url} again")
        seen.add(key)

    def _outcome(self, task: CrawlTask, adapter: Adapter, crawl: _Pages,
                 raw_ref: str) -> CrawlOutcome:
        return build_outcome(task, adapter, crawl.pages, crawl.refs, crawl.extractions,
                             raw_ref, self._max_links)


def build_outcome(task: CrawlTask, adapter: Adapter, pages: list[Page], refs: list[str],
                  extractions: list[Extraction], raw_ref: str,
                  max_links: int = MAX_LINKS) -> CrawlOutcome:
    """A crawl's outcome from its pages (archived as `refs`) and what was extracted:
    the crawler's, and the API's for a page a remote bot submitted."""
    last = pages[-1]
    found = _merge(extractions)
    dropped = max(len(found.links) - max_links, 0) + max(
        len(found.stores) - max_links, 0)
    if dropped:
        found = replace(found, links=found.links[:max_links],
                        stores=found.stores[:max_links])
    if task.kind in _NEEDS_PRODUCTS and not found.observations:
        return CrawlFailure(
            "no_products",
            f"{adapter.name} found no products at {last.url} ({len(pages)} page(s))",
            retryable=False,
            http_status=last.status,
        )
    return CrawlSuccess(
        http_status=last.status,
        final_url=pages[0].url,
        extractor=adapter.name,
        extractor_version=adapter.version,
        # one page: its archive ref is the same sha256 (`content_hash` of one body)
        content_hash=(refs[0] if len(refs) == 1
                      else content_hash([page.body for page in pages])),
        raw_ref=raw_ref,
        pages=len(pages),
        bytes=sum(len(page.body) for page in pages),
        observations=found.observations,
        stores=found.stores,
        platform_store_id=found.platform_store_id,
        catalog_url=found.catalog_url,
        links=found.links,
        links_dropped=dropped,
    )


def gone(task: CrawlTask, error: FetchError) -> CrawlSuccess | None:
    """A product page answering 404/410 is an answer: the product is no longer offered."""
    if task.kind != "product_page" or error.http_status not in (404, 410):
        return None
    return CrawlSuccess(http_status=error.http_status, final_url=task.url, extractor="gone",
                        extractor_version="gone/1", content_hash=f"gone:{error.http_status}",
                        gone=True)


def _merge(extractions: list[Extraction]) -> Extraction:
    return Extraction(
        observations=tuple(o for e in extractions for o in e.observations),
        stores=tuple(s for e in extractions for s in e.stores),
        platform_store_id=next(
            (e.platform_store_id for e in extractions if e.platform_store_id), None
        ),
        catalog_url=next((e.catalog_url for e in extractions if e.catalog_url), None),
        links=tuple(dict.fromkeys(link for e in extractions for link in e.links)),
    )


def request_key(request: Request) -> str:
    body = json.dumps(request.json, sort_keys=True, default=str)
    return f"{request.method} {request.url} {body}"


def build_crawler(
    client: httpx.AsyncClient,
    data_dir: Path | str,
    adapters: Registry,
    *,
    config: PolitenessConfig = _DEFAULT_CONFIG,
    limits: FetchLimits = _DEFAULT_LIMITS,
    max_pages: int = 200,
    guard: AddressGuard | None = None,
    egress: Egress | None = None,
) -> Crawler:
    """A Crawler with real time, robots.txt over `client` and the data dir's archive.

    `guard` must be the one `client` was built with (`build_client(guard=...)`)."""
    guard = guard or AddressGuard()
    politeness = Politeness(RobotsFetcher.on(client, guard), time.monotonic, asyncio.sleep,
                            config)
    return Crawler(client, politeness, RawArchive(data_dir), adapters, max_pages, limits,
                   guard=guard, egress=egress)
