"""A crawl's pages -> its outcome: adapter choice, extraction, pagination limits, outcome.

Whoever fetches the pages — the local `Crawler`, or a remote bot whose pages the API
receives one at a time — hands them to one `CrawlPages` (opened by a `PageReader`
with the adapters and limits of this deployment), which answers the next request the
adapter wants, or that the crawl is complete, and then builds the outcome. A fetch or
extraction error becomes a failure by one taxonomy (`failed`): a product page that
answers 404/410 is gone, an unreadable page a `parse_error`.
"""

from __future__ import annotations

import json
import logging
from dataclasses import replace

from domain.values import CrawlFailure, CrawlOutcome, CrawlSuccess, CrawlTask
from workers.archive.raw_archive import content_hash
from workers.extraction.adapters.base import Adapter, Extraction, ExtractionError, Page, Request
from workers.extraction.adapters.registry import Registry
from workers.fetching.fetch_errors import FetchError, failure

__all__ = ["MAX_LINKS", "MAX_PAGES", "CrawlPages", "PageReader", "build_outcome", "failed",
           "gone", "request_key"]

log = logging.getLogger(__name__)

_NEEDS_PRODUCTS = frozenset({"catalog", "product_page"})
#: links (feeds) and stores (locators) one crawl hands on; the rest are only counted
MAX_LINKS = 10_000
#: pages one crawl follows before it fails as `too_large`
MAX_PAGES = 200


class PageReader:
    """The adapters and limits pages are read with: one per deployment, shared by every
    crawl (local or remote) in it."""

    def __init__(self, adapters: Registry, max_pages: int = MAX_PAGES,
                 max_links: int = MAX_LINKS) -> None:
        self.adapters = adapters
        self.max_pages = max_pages
        self.max_links = max_links

    def begin(self, task: CrawlTask) -> CrawlPages:
        """A crawl of `task`: `first` is the request to fetch first. An adapter that
        cannot start this task raises `ExtractionError`."""
        return CrawlPages(self, task)


class CrawlPages:
    """One crawl in progress: each fetched page is `take`n in order; `take` answers the
    next request, or None when the crawl is complete (then `outcome`). Errors are raised
    (`ExtractionError`, `FetchError` for pagination past `max_pages`): `failed` turns
    them into the crawl's failure."""

    def __init__(self, reader: PageReader, task: CrawlTask) -> None:
        self.reader = reader
        self.task = task
        self.adapter: Adapter | None = reader.adapters.for_task(task)
        self.first = self.adapter.start(task) if self.adapter else Request(task.url)
        #: the requests taken or asked for, in order: the next page answers the last
        self.requests = [self.first]
        self.pages: list[Page] = []
        self.refs: list[str] = []
        self.extractions: list[Extraction] = []
        self._seen = {request_key(self.first)}

    @property
    def expected(self) -> Request:
        """The request the next page taken answers."""
        return self.requests[len(self.pages)]

    def take(self, page: Page, ref: str) -> Request | None:
        """Read the next page (archived as `ref`): the request it asks for next, or None."""
        if self.adapter is None:
            self.adapter = self.reader.adapters.detect(page)
            if self.adapter is None:
                raise ExtractionError(f"no adapter recognises the content at {page.url}")
        extraction = _extract(self.adapter, page, self.task)
        # the text was only for the extraction: the outcome needs the bytes and address
        self.pages.append(page.without_text())
        self.refs.append(ref)
        self.extractions.append(extraction)
        following = extraction.next_request
        if following is not None:
            self._check_pagination(following)
            self.requests.append(following)
        return following

    def _check_pagination(self, request: Request) -> None:
        if len(self.pages) >= self.reader.max_pages:
            # a truncated catalog would wrongly report products as gone
            raise FetchError(
                "too_large",
                f"{request.url}: pagination exceeds max_pages={self.reader.max_pages}",
                retryable=False,
            )
        key = request_key(request)
        if key in self._seen:
            raise ExtractionError(f"pagination loop: {request.method} {request.url} again")
        self._seen.add(key)

    def outcome(self, raw_ref: str) -> CrawlOutcome:
        """The complete crawl's outcome, its pages archived under `raw_ref`."""
        assert self.adapter is not None and self.pages, "no page taken"  # noqa: S101
        return build_outcome(self.task, self.adapter, self.pages, self.refs,
                             self.extractions, raw_ref, self.reader.max_links)


def _extract(adapter: Adapter, page: Page, task: CrawlTask) -> Extraction:
    try:
        return adapter.extract(page, task)
    except ExtractionError:
        raise
    except Exception as error:
        # an adapter tripping over a page is a parse failure of that page
        log.warning("adapter %s crashed on %s", adapter.name, page.url, exc_info=True)
        raise ExtractionError(
            f"{adapter.name} could not read {page.url}: {type(error).__name__}: {error}"
        ) from error


def failed(task: CrawlTask, error: Exception) -> CrawlOutcome:
    """The failure a crawl's error is (or, for a product page answering 404/410, its
    answer: the product is gone)."""
    if isinstance(error, FetchError):
        return gone(task, error) or error.to_failure()
    if isinstance(error, ExtractionError):
        return failure("parse_error", f"{task.url}: {error}")
    return failure("worker_error", f"{task.url}: {type(error).__name__}: {error}")


def build_outcome(task: CrawlTask, adapter: Adapter, pages: list[Page], refs: list[str],
                  extractions: list[Extraction], raw_ref: str,
                  max_links: int = MAX_LINKS) -> CrawlOutcome:
    """A crawl's outcome from its pages (archived as `refs`) and what was extracted."""
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
