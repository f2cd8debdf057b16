"""The fetcher: one request -> a decoded `Page`, or a typed `FetchError`.

It streams the body through an injected `httpx.AsyncClient` and enforces:
the address guard and the caller's politeness slot on every hop (each hop
waits for its own host's robots.txt, spacing and concurrency), redirect loops,
connect/read timeouts (httpx), a total timeout around everything including
redirects and the body (asyncio), a maximum body size, and a redirect limit,
recording the final URL. The body is read raw and decoded by
`workers.fetching.content_encoding`, bounded by what comes out: the same `max_bytes`
caps the bytes read and the bytes decoded, and a body of more than one coding
layer (or of an unknown coding) is refused before it is read.
"""

from __future__ import annotations

import asyncio
import codecs
import time
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass

import httpx

from workers.extraction.adapters.base import Page, Request
from workers.fetching import charset
from workers.fetching.addresses import AddressGuard
from workers.fetching.backoff import parse_retry_after
from workers.fetching.content_encoding import (
    ACCEPT_ENCODING,
    BodyTooLarge,
    decode,
    refusal,
)
from workers.fetching.egress import current_client, note_latency
from workers.fetching.fetch_errors import FetchError, from_status, from_transport_error, status_kind

__all__ = ["Decode", "FetchLimits", "Fetcher", "Slot", "decode_body"]

#: any byte-order mark (charset.decode reads it first)
_BOMS = (codecs.BOM_UTF8, codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE, codecs.BOM_UTF32_BE)

#: bytes + Content-Type header -> text (see workers/fetching/charset.py)
Decode = Callable[[bytes, str], str]
#: url -> a context entered around that request (the crawler's politeness slot)
Slot = Callable[[str], AbstractAsyncContextManager[None]]


@asynccontextmanager
async def _no_slot(_url: str) -> AsyncIterator[None]:
    yield


@dataclass(frozen=True)
class FetchLimits:
    connect_timeout: float = 10.0
    read_timeout: float = 20.0
    total_timeout: float = 60.0
    max_bytes: int = 8 * 1024 * 1024
    max_redirects: int = 5


def decode_body(body: bytes, content_type: str) -> str:
    """Bytes -> text the way a browser would (`workers.fetching.charset`); never raises."""
    if not body.startswith(_BOMS):
        # charset.decode's first candidates, without computing its charset guess
        # (charset-normalizer, ~1 ms a page): it is only tried when these fail.
        for encoding in (charset.declared_charset(body, content_type), "utf-8"):
            if encoding is None:
                continue
            try:
                return body.decode(encoding)
            except (UnicodeDecodeError, LookupError):
                continue
    return charset.decode(body, content_type)[0]


class Fetcher:
    """Fetches `Request`s; see the module docstring for the limits it enforces."""

    def __init__(
        self,
        client: httpx.AsyncClient,
        limits: FetchLimits = FetchLimits(),
        decode: Decode = decode_body,
        wall_clock: Callable[[], float] = time.time,
        guard: AddressGuard | None = None,
    ) -> None:
        self._client = client
        #: every hop's address is checked before it is requested (workers/fetching/addresses.py)
        self._guard = guard or AddressGuard()
        self._limits = limits
        self._decode = decode
        self._wall_clock = wall_clock
        self._timeout = httpx.Timeout(
            limits.read_timeout, connect=limits.connect_timeout, pool=limits.total_timeout
        )

    async def fetch(self, request: Request, user_agent: str, slot: Slot | None = None) -> Page:
        """The final page after redirects; raises `FetchError` on any failure.

        `slot(url)`, when given, is entered around each hop (politeness: robots.txt,
        the hop's own host's spacing and concurrency); the crawler passes it.
        """
        try:
            async with asyncio.timeout(self._limits.total_timeout):
                return await self._follow(request, self._build(request, user_agent),
                                          slot or _no_slot)
        except TimeoutError:
            total = self._limits.total_timeout
            message = f"{request.method} {request.url}: timed out after {total:g}s total"
            raise FetchError("timeout", message) from None
        except httpx.HTTPError as exc:
            raise from_transport_error(exc, request.method, request.url) from exc
        except httpx.InvalidURL as exc:
            raise FetchError(
                "http_4xx", f"{request.method} {request.url}: invalid URL: {exc}"
            ) from exc

    @property
    def _routed(self) -> httpx.AsyncClient:
        """The egress proxy's client when the crawler routed this request (workers.fetching.egress)."""
        return current_client() or self._client

    def _build(self, request: Request, user_agent: str) -> httpx.Request:
        # only the codings workers.fetching.content_encoding decodes within the byte cap
        asked = {k: v for k, v in request.headers.items() if k.lower() != "accept-encoding"}
        headers = {"User-Agent": user_agent, **asked, "Accept-Encoding": ACCEPT_ENCODING}
        return self._routed.build_request(
            request.method, request.url, json=request.json, headers=headers,
            timeout=self._timeout,
        )

    async def _follow(self, original: Request, request: httpx.Request, slot: Slot) -> Page:
        first = request
        seen: set[str] = set()
        for _ in range(self._limits.max_redirects + 1):
            url = str(request.url)
            if url in seen:
                raise FetchError("too_many_redirects",
                                 f"{first.method} {first.url}: redirect loop back to {url}")
            seen.add(url)
            await self._guard.check(url, request.method)
            async with slot(url):
                sent = time.monotonic()
                response = await self._routed.send(request, stream=True, follow_redirects=False)
                note_latency(time.monotonic() - sent)
                try:
                    if not response.is_redirect or response.next_request is None:
                        return await self._read(response, original)
                    request = response.next_request
                finally:
                    await response.aclose()
        raise FetchError(
            "too_many_redirects",
            f"{first.method} {first.url}: more than {self._limits.max_redirects} redirects"
            f" (stopped at {request.url})",
        )

    async def _read(self, response: httpx.Response, request: Request) -> Page:
        self._raise_for_status(response)
        self._check_declared_size(response)
        self._check_encoding(response)
        body = self._decoded(response, await self._read_body(response))
        content_type = response.headers.get("content-type", "")
        # decoded when the extraction reads it: a page waiting for the event loop
        # holds its bytes only
        return Page(
            url=str(response.url),
            status=response.status_code,
            content_type=content_type,
            body=body,
            request=request,
            decode=self._decode,
        )

    def _raise_for_status(self, response: httpx.Response) -> None:
        if status_kind(response.status_code) is None:
            return
        retry_after = None
        if response.status_code in (429, 503):
            retry_after = parse_retry_after(response.headers.get("retry-after"), self._wall_clock())
        request = response.request
        raise from_status(
            request.method,
            str(request.url),
            response.status_code,
            response.reason_phrase,
            retry_after,
        )

    def _check_declared_size(self, response: httpx.Response) -> None:
        declared = response.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > self._limits.max_bytes:
            raise self._too_large(response, f"Content-Length {declared}")

    def _check_encoding(self, response: httpx.Response) -> None:
        reason = refusal(response.headers.get("content-encoding", ""))
        if reason is not None:
            request = response.request
            raise FetchError("bad_encoding", f"{request.method} {request.url}: {reason}",
                             http_status=response.status_code)

    def _decoded(self, response: httpx.Response, raw: bytes) -> bytes:
        request = response.request
        try:
            return decode(raw, response.headers.get("content-encoding", ""),
                          self._limits.max_bytes)
        except BodyTooLarge as error:
            raise self._too_large(response, str(error)) from None
        except ValueError as error:
            raise FetchError("parse_error", f"{request.method} {request.url}: {error}",
                             http_status=response.status_code) from None

    async def _read_body(self, response: httpx.Response) -> bytes:
        """The raw (still encoded) body, at most `max_bytes` of it."""
        chunks: list[bytes] = []
        size = 0
        async for chunk in response.aiter_raw():
            size += len(chunk)
            if size > self._limits.max_bytes:
                # stop here: closing the response drops the connection
                raise self._too_large(response, f"more than {size} bytes read")
            chunks.append(chunk)
        return b"".join(chunks)

    def _too_large(self, response: httpx.Response, detail: str) -> FetchError:
        request = response.request
        return FetchError(
            "too_large",
            f"{request.method} {request.url}: body over the {self._limits.max_bytes}-byte"
            f" limit ({detail})",
            http_status=response.status_code,
        )
