"""Sending alerts: signed JSON webhooks (httpx) and Apprise URLs, behind the address guard.

`Notifier.send(channel, body, headers)` makes one attempt and reports it as a
`SendOutcome`; it never raises for a failure of the world.

- **webhook**: `POST` of the exact `body` bytes, `Content-Type: application/json`, the
  caller's headers (the idempotency key), and, when the channel has a secret,
  `X-Crawl-Ledger-Signature: sha256=<hex HMAC-SHA256 of the body>`. The URL is checked
  by the `AddressGuard` before the request and again when the connection is opened
  (the client's guarded resolver); no redirect is followed. 2xx is delivered; 408,
  429 and 5xx, timeouts and transport errors are retryable; any other status and a
  refused address are not.
- **apprise**: the body's `message` (and `title`) through `apprise` (mail, Slack,
  Telegram, ntfy, Discord, …). Apprise reaches its services with its own HTTP
  client, so the guard checks the URL's host first for the schemes that name a
  host of the operator's choosing (`SELF_HOSTED`); the others go to their service's
  public endpoint.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import httpx

from workers.addresses import AddressGuard
from workers.errors import FetchError

__all__ = ["SELF_HOSTED", "Channel", "Notifier", "SendOutcome", "display_url", "is_apprise_url",
           "sign"]

SIGNATURE = "X-Crawl-Ledger-Signature"
#: Apprise schemes whose host part is a server the operator names (checked by the guard)
SELF_HOSTED = frozenset({"json", "jsons", "xml", "xmls", "form", "forms", "ntfy", "ntfys",
                         "gotify", "gotifys", "mailto", "mailtos", "apprise", "apprises",
                         "matrix", "matrixs", "mmost", "mmosts", "rocket", "rockets"})
TIMEOUT = 20.0


@dataclass(frozen=True)
class Channel:
    """Where a subscription's alerts go: `kind` webhook|apprise, its URL, a webhook secret."""

    kind: str
    url: str
    secret: str | None = None

    def __repr__(self) -> str:  # never show the URL's credentials or the secret
        return f"Channel({self.kind}, {display_url(self.url)})"


@dataclass(frozen=True)
class SendOutcome:
    ok: bool
    status: int | None = None
    error: str = ""
    retryable: bool = True


def sign(secret: str, body: bytes) -> str:
    """The signature header's value: `sha256=` + hex HMAC-SHA256 of the exact body."""
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def display_url(url: str) -> str:
    """The URL without credentials, query or path secrets: scheme://host[:port]/path for
    a webhook-like URL, scheme:// alone when the host may itself be a token."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme in ("http", "https") or scheme in SELF_HOSTED:
        host = parts.hostname or ""
        port = f":{parts.port}" if parts.port else ""
        path = parts.path if scheme in ("http", "https") else ""
        return f"{scheme}://{host}{port}{path}"
    return f"{scheme}://…"


class Notifier:
    """One delivery attempt per call; see the module docstring."""

    def __init__(self, client: httpx.AsyncClient, guard: AddressGuard,
                 user_agent: str = "crawl-ledger-alerts", timeout: float = TIMEOUT) -> None:
        self.client = client
        self.guard = guard
        self.user_agent = user_agent
        self.timeout = timeout

    async def send(self, channel: Channel, body: bytes,
                   headers: Mapping[str, str]) -> SendOutcome:
        try:
            if channel.kind == "webhook":
                return await self._webhook(channel, body, headers)
            if channel.kind == "apprise":
                return await self._apprise(channel, body)
            return SendOutcome(False, error=f"unknown channel kind {channel.kind}",
                               retryable=False)
        except FetchError as error:
            return SendOutcome(False, error=f"{error.kind}: {error}",
                               retryable=error.kind != "blocked_address")

    async def _webhook(self, channel: Channel, body: bytes,
                       headers: Mapping[str, str]) -> SendOutcome:
        await self.guard.check(channel.url, "POST")
        sent = {"Content-Type": "application/json", "User-Agent": self.user_agent, **headers}
        if channel.secret:
            sent[SIGNATURE] = sign(channel.secret, body)
        try:
            async with asyncio.timeout(self.timeout):
                response = await self.client.post(channel.url, content=body, headers=sent)
        except TimeoutError:
            return SendOutcome(False, error=f"timed out after {self.timeout:g}s")
        except (httpx.HTTPError, OSError) as error:
            blocked = "blocked address" in str(error)
            return SendOutcome(False, error=f"{type(error).__name__}: {error}"[:300],
                               retryable=not blocked)
        status = response.status_code
        if 200 <= status < 300:
            return SendOutcome(True, status)
        retryable = status in (408, 425, 429) or status >= 500
        return SendOutcome(False, status, f"HTTP {status}", retryable)

    async def _apprise(self, channel: Channel, body: bytes) -> SendOutcome:
        scheme = urlsplit(channel.url).scheme.lower()
        if scheme in SELF_HOSTED:
            await self.guard.check(channel.url.replace(f"{scheme}://", "http://", 1), "POST")
        message = json.loads(body)
        outcome = await asyncio.to_thread(_apprise_notify, channel.url,
                                          str(message.get("title") or "crawl-ledger alert"),
                                          str(message.get("message") or body.decode()))
        if outcome == "sent":
            return SendOutcome(True)
        if outcome == "invalid":
            return SendOutcome(False, error="not a URL Apprise understands", retryable=False)
        return SendOutcome(False, error="apprise could not notify")


def _apprise() -> Any:
    """The apprise module, imported on first use (it imports the stdlib's deprecated
    `imghdr`, which tests run with warnings as errors would refuse)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "'imghdr' is deprecated", DeprecationWarning)
        import apprise
        from apprise.plugins import N_MGR

        N_MGR.load_modules()  # type: ignore[no-untyped-call]  # the plugins import lazily: here, once, under the filter
    return apprise


def is_apprise_url(url: str) -> bool:
    return bool(_apprise().Apprise().add(url))


def _apprise_notify(url: str, title: str, message: str) -> str:
    sender = _apprise().Apprise()
    if not sender.add(url):
        return "invalid"
    return "sent" if sender.notify(body=message, title=title) else "failed"
