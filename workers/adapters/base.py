"""The contract between the fetcher and the extractors (platform adapters).

An adapter is pure: it builds requests and turns fetched pages into
observations; it never does I/O. The fetcher (`workers.crawl`) drives it:

    request = adapter.start(task)            # the first request of a crawl
    page = await fetch(request)
    extraction = adapter.extract(page, task)
    while extraction.next_request:           # pagination (APIs)
        ...

Adapters declare how they recognise their payloads (`detects`), so a job
need not name its platform when the content says it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from domain.values import CrawlTask, DiscoveredStore, Observation


@dataclass(frozen=True)
class Request:
    """An HTTP request an adapter wants made."""

    url: str
    method: str = "GET"
    json: Mapping[str, Any] | None = None
    headers: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Page:
    """A fetched (or saved) response, already decoded to text."""

    url: str
    text: str
    status: int = 200
    content_type: str = ""
    body: bytes = b""
    #: The request that produced this page. APIs that paginate in a POST body
    #: (GraphQL) need it to know which page this was; None means "the first".
    request: Request | None = None


@dataclass(frozen=True)
class Extraction:
    """What an adapter found on one page."""

    observations: tuple[Observation, ...] = ()
    next_request: Request | None = None
    stores: tuple[DiscoveredStore, ...] = ()
    platform_store_id: str | None = None
    catalog_url: str | None = None
    links: tuple[str, ...] = ()


class ExtractionError(ValueError):
    """The page could not be read as what the adapter expected (`parse_error`)."""


class Adapter(Protocol):
    name: str
    version: str

    def detects(self, page: Page) -> bool: ...

    def start(self, task: CrawlTask) -> Request: ...

    def extract(self, page: Page, task: CrawlTask) -> Extraction: ...
