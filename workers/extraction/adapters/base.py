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

from collections.abc import Callable, Mapping
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


class Page:
    """A fetched (or saved) response: its bytes and its text.

    The text is given, or decoded from `body` by `decode(body, content_type)` on first
    use (the fetcher's pages): a fetched page waiting for its extraction holds its bytes
    only, and its text lives while it is read. Immutable, as a value.
    """

    __slots__ = ("url", "status", "content_type", "body", "request", "_text", "_decode")

    url: str
    status: int
    content_type: str
    body: bytes
    #: The request that produced this page. APIs that paginate in a POST body
    #: (GraphQL) need it to know which page this was; None means "the first".
    request: Request | None
    _text: str | None
    _decode: Callable[[bytes, str], str] | None

    def __init__(self, url: str, text: str | None = None, status: int = 200,
                 content_type: str = "", body: bytes = b"", request: Request | None = None,
                 *, decode: Callable[[bytes, str], str] | None = None) -> None:
        if text is None and decode is None:
            raise TypeError("a Page needs its text, or a decode for its body")
        for name, value in (("url", url), ("status", status), ("content_type", content_type),
                            ("body", body), ("request", request), ("_text", text),
                            ("_decode", decode)):
            object.__setattr__(self, name, value)

    @property
    def text(self) -> str:
        """The page decoded to text (decoded once, on first use, when not given)."""
        text: str | None = self._text
        if text is None:
            assert self._decode is not None  # noqa: S101 - __init__ ensures one of the two
            text = self._decode(self.body, self.content_type)
            object.__setattr__(self, "_text", text)
            object.__setattr__(self, "_decode", None)
        return text

    def without_text(self) -> Page:
        """The same page with its text dropped (kept for its bytes and address only)."""
        return Page(self.url, "", self.status, self.content_type, self.body, self.request)

    def __reduce__(self) -> tuple[type[Page], tuple[object, ...]]:  # pickle, copy: decoded
        return Page, (self.url, self.text, self.status, self.content_type, self.body,
                      self.request)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"Page is immutable: cannot set {name}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"Page is immutable: cannot delete {name}")

    def _key(self) -> tuple[object, ...]:
        return (self.url, self.text, self.status, self.content_type, self.body, self.request)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Page) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        return (f"Page(url={self.url!r}, status={self.status}, "
                f"content_type={self.content_type!r}, {len(self.body)} bytes)")


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
