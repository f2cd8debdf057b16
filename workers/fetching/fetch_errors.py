"""The failure taxonomy: every way a fetch can fail, as one typed exception.

    FetchError(kind, message, http_status=None, retry_after=None, retryable=None)
        kind is one of `domain.values.ERROR_KINDS`:
        robots_disallowed  dns  connect  timeout  tls  too_many_redirects
        too_large  truncated  bad_encoding  http_4xx  http_5xx  rate_limited  blocked
        blocked_address  parse_error

`from_transport_error` maps httpx exceptions (whatever the transport), and
`from_status` maps HTTP status codes. `FetchError.to_failure` turns one into
the `CrawlFailure` value a worker reports; `failure` builds one directly.
"""

from __future__ import annotations

import socket
import ssl
from collections.abc import Iterator

import httpx

from domain.values import ERROR_KINDS, CrawlFailure

__all__ = ["FetchError", "failure", "from_status", "from_transport_error", "status_kind"]


class FetchError(Exception):
    """A fetch (or a politeness check before it) failed in a known way."""

    def __init__(
        self,
        kind: str,
        message: str,
        *,
        http_status: int | None = None,
        retry_after: float | None = None,
        retryable: bool | None = None,
    ) -> None:
        if kind not in ERROR_KINDS:
            raise ValueError(f"unknown error kind {kind!r}")
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.http_status = http_status
        self.retry_after = retry_after
        self.retryable = ERROR_KINDS[kind] if retryable is None else retryable

    def to_failure(self, duration: float = 0.0) -> CrawlFailure:
        return CrawlFailure(
            error_kind=self.kind,
            message=self.message,
            retryable=self.retryable,
            http_status=self.http_status,
            retry_after=self.retry_after,
            duration=duration,
        )


def failure(kind: str, message: str, *, duration: float = 0.0) -> CrawlFailure:
    """A `CrawlFailure` of `kind` with the taxonomy's default retryability."""
    return FetchError(kind, message).to_failure(duration)


def status_kind(status: int) -> str | None:
    """The error kind of an HTTP status, or None when it is not a failure."""
    if status == 403:
        return "blocked"
    if status == 429:
        return "rate_limited"
    if 400 <= status < 500:
        return "http_4xx"
    if status >= 500:
        return "http_5xx"
    return None


def from_status(
    method: str, url: str, status: int, reason: str, retry_after: float | None
) -> FetchError:
    """`GET http://x/y: HTTP 503 Service Unavailable (Retry-After 30s)`."""
    kind = status_kind(status)
    if kind is None:
        raise ValueError(f"HTTP {status} is not a failure")
    message = f"{method} {url}: HTTP {status} {reason}".rstrip()
    if retry_after is not None:
        message += f" (Retry-After {retry_after:g}s)"
    return FetchError(kind, message, http_status=status, retry_after=retry_after)


def from_transport_error(exc: Exception, method: str, url: str) -> FetchError:
    """Map an httpx (or underlying socket/ssl) exception to a `FetchError`."""
    kind = _kind_of(exc)
    if kind == "blocked_address":  # the guard's own words name the address
        blocked = next(c for c in _causes(exc) if type(c).__name__ == "BlockedAddress")
        return FetchError(kind, f"{method} {url}: {blocked}")
    detail = str(exc) or type(exc).__name__
    return FetchError(kind, f"{method} {url}: {_KIND_LABELS[kind]}: {detail}")


_KIND_LABELS = {
    "truncated": "body cut short",
    "dns": "DNS lookup failed",
    "connect": "connection failed",
    "timeout": "timed out",
    "tls": "TLS error",
    "too_many_redirects": "too many redirects",
    "parse_error": "undecodable response",
}


def _kind_of(exc: Exception) -> str:
    # The cause chain says more than the httpx type: the aiohttp transport, for
    # one, reports a refused connection as ConnectTimeout.
    for cause in _causes(exc):
        if type(cause).__name__ == "BlockedAddress":  # workers.fetching.addresses, at connect time
            return "blocked_address"
        if type(cause).__name__ in _TRUNCATED_ERRORS:  # the body ended before it should
            return "truncated"
    for cause in _causes(exc):
        if isinstance(cause, socket.gaierror) or type(cause).__name__ in _DNS_ERRORS:
            return "dns"
        if isinstance(cause, ssl.SSLError | ssl.CertificateError):
            return "tls"
        if type(cause).__name__ in _TLS_ERRORS:
            return "tls"
    for cause in _causes(exc):
        if isinstance(cause, TimeoutError):  # before OSError: it is one
            return "timeout"
        if isinstance(cause, OSError) or type(cause).__name__ in _CONNECT_ERRORS:
            return "connect"
    return _kind_of_httpx(exc)


_DNS_ERRORS = frozenset({"ClientConnectorDNSError"})
_TRUNCATED_ERRORS = frozenset({"ClientPayloadError", "ContentLengthError", "TransferEncodingError",
                               "IncompleteRead"})
_TLS_ERRORS = frozenset({"ClientSSLError", "ClientConnectorCertificateError"})
_CONNECT_ERRORS = frozenset({"ServerDisconnectedError"})


def _kind_of_httpx(exc: Exception) -> str:
    text = str(exc).lower()
    if isinstance(exc, httpx.TooManyRedirects):
        return "too_many_redirects"
    if isinstance(exc, httpx.DecodingError):
        return "parse_error"
    if isinstance(exc, httpx.TimeoutException | TimeoutError):
        return "timeout"
    if "name or service not known" in text or "nodename nor servname" in text:
        return "dns"
    if "certificate" in text or "[ssl" in text:
        return "tls"
    return "connect"


def _causes(exc: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__
