"""Sending alerts: one attempt per call, behind the address guard (`workers.alert_delivery.channels`).

`Notifier.check(channel)` is the egress policy at creation: the channel's kind is
allowed (`plan_channel`) and every host it will connect to passes the guard.
`Notifier.send(channel, body, headers)` makes one attempt and reports it as a
`SendOutcome`; it checks the same way first (DNS can change) and never raises
for a failure of the world. Its error never holds a secret of the channel.

- **webhook**: `POST` of the exact `body` bytes, `Content-Type: application/json`, the
  caller's headers (the idempotency key), and, when the channel has a secret,
  `X-Crawl-Ledger-Signature: sha256=<hex HMAC-SHA256 of the body>`.
- **json:// form:// xml://**: the body's `title` and `message` in Apprise's payload
  format (`version`, `title`, `message`, `type`), with the URL's `+Header`s.
- Both go through the project's HTTP client: its resolver connects only to
  addresses the guard accepts, and no redirect is followed. 2xx is delivered;
  408, 425, 429 and 5xx, timeouts and transport errors are retryable; any other
  status and a refused address are not.
- **Apprise services** (Slack, Discord, Telegram, ntfy.sh, mail): through
  `apprise`, redirects off, once their fixed hosts or the SMTP server passed the
  guard. Apprise resolves the name again itself when it connects.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
from collections.abc import Mapping
from dataclasses import dataclass, replace
from urllib.parse import urlencode
from xml.sax.saxutils import escape

import httpx

from domain.errors import InvalidInput
from workers.alert_delivery.channels import Channel, ChannelPlan, apprise_module, display_url, plan_channel, scrub
from workers.fetching.addresses import AddressGuard
from workers.fetching.fetch_errors import FetchError

__all__ = ["Channel", "Notifier", "SendOutcome", "display_url", "sign"]

SIGNATURE = "X-Crawl-Ledger-Signature"
TIMEOUT = 20.0
#: Apprise's payload version for its json:// and form:// notifications, and xml://'s
APPRISE_VERSION, APPRISE_XML_VERSION = "1.0", "1.1"
_SOAP = ("<?xml version='1.0' encoding='utf-8'?>\n<soapenv:Envelope xmlns:soapenv="
         "\"http://schemas.xmlsoap.org/soap/envelope/\" xmlns:xsd=\"http://www.w3.org/2001/"
         "XMLSchema\" xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\"><soapenv:Body>"
         "<Notification>{core}</Notification></soapenv:Body></soapenv:Envelope>")


@dataclass(frozen=True)
class SendOutcome:
    ok: bool
    status: int | None = None
    error: str = ""
    retryable: bool = True


def sign(secret: str, body: bytes) -> str:
    """The signature header's value: `sha256=` + hex HMAC-SHA256 of the exact body."""
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


class Notifier:
    """One delivery attempt per call; see the module docstring."""

    def __init__(self, client: httpx.AsyncClient, guard: AddressGuard,
                 user_agent: str = "crawl-ledger-alerts", timeout: float = TIMEOUT) -> None:
        self.client = client
        self.guard = guard
        self.user_agent = user_agent
        self.timeout = timeout

    async def check(self, channel: Channel) -> str:
        """The channel's display form once it may be used; `InvalidInput` otherwise."""
        plan = plan_channel(channel)
        try:
            await self._guard(plan)
        except FetchError as error:
            raise InvalidInput(f"alert channel {plan.display} refused: {error}") from None
        return plan.display

    async def send(self, channel: Channel, body: bytes,
                   headers: Mapping[str, str]) -> SendOutcome:
        outcome = await self._attempt(channel, body, headers)
        return replace(outcome, error=scrub(outcome.error, channel)[:300])

    async def _attempt(self, channel: Channel, body: bytes,
                       headers: Mapping[str, str]) -> SendOutcome:
        try:
            plan = plan_channel(channel)
            await self._guard(plan)
            if plan.via == "http":
                return await self._post(plan, channel.secret, body, headers)
            return await self._apprise(plan, body)
        except InvalidInput as error:
            return SendOutcome(False, error=str(error), retryable=False)
        except FetchError as error:
            return SendOutcome(False, error=f"{error.kind}: {error}",
                               retryable=error.kind != "blocked_address")

    async def _guard(self, plan: ChannelPlan) -> None:
        for destination in plan.destinations:
            await self.guard.check(destination.as_url(), "connect to")

    async def _post(self, plan: ChannelPlan, secret: str | None, body: bytes,
                    headers: Mapping[str, str]) -> SendOutcome:
        content, content_type = _payload(plan.body_format, body)
        sent = {"Content-Type": content_type, "User-Agent": self.user_agent, **headers,
                **plan.headers}
        if secret:
            sent[SIGNATURE] = sign(secret, content)
        try:
            async with asyncio.timeout(self.timeout):
                response = await self.client.request(plan.method, plan.url, content=content,
                                                      headers=sent, auth=plan.auth or httpx.USE_CLIENT_DEFAULT)
        except TimeoutError:
            return SendOutcome(False, error=f"timed out after {self.timeout:g}s")
        except (httpx.HTTPError, OSError, ValueError) as error:
            blocked = "blocked address" in str(error)
            return SendOutcome(False, error=f"{type(error).__name__}: {error}",
                               retryable=not blocked)
        status = response.status_code
        if 200 <= status < 300:
            return SendOutcome(True, status)
        retryable = status in (408, 425, 429) or status >= 500
        return SendOutcome(False, status, f"HTTP {status}", retryable)

    async def _apprise(self, plan: ChannelPlan, body: bytes) -> SendOutcome:
        title, message = _title_and_message(body)
        outcome = await asyncio.to_thread(_apprise_notify, plan.url, title, message)
        if outcome == "sent":
            return SendOutcome(True)
        if outcome == "invalid":
            return SendOutcome(False, error="not a URL Apprise understands", retryable=False)
        return SendOutcome(False, error="apprise could not notify")


def _title_and_message(body: bytes) -> tuple[str, str]:
    message = json.loads(body)
    return (str(message.get("title") or "crawl-ledger alert"),
            str(message.get("message") or body.decode()))


def _payload(body_format: str, body: bytes) -> tuple[bytes, str]:
    """The bytes sent and their content type: the body itself for a webhook, else
    Apprise's notification format around its title and message."""
    if body_format == "webhook":
        return body, "application/json"
    title, message = _title_and_message(body)
    if body_format == "json":
        payload = {"version": APPRISE_VERSION, "title": title, "message": message,
                   "attachments": [], "type": "info"}
        return json.dumps(payload).encode(), "application/json"
    if body_format == "form":
        fields = {"version": APPRISE_VERSION, "title": title, "message": message, "type": "info"}
        return urlencode(fields).encode(), "application/x-www-form-urlencoded"
    core = "".join(f"<{k}>{escape(v)}</{k}>" for k, v in (
        ("Version", APPRISE_XML_VERSION), ("Subject", title), ("MessageType", "info"),
        ("Message", message)))
    return _SOAP.format(core=core).encode(), "application/xml"


def _apprise_notify(url: str, title: str, message: str) -> str:
    apprise = apprise_module()
    sender = apprise.Apprise(asset=apprise.AppriseAsset(http_redirects=False))
    if not sender.add(url):
        return "invalid"
    return "sent" if sender.notify(body=message, title=title) else "failed"
