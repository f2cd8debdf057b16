"""What a request may cost before it is answered: auth before its body, its body capped
and timed.

`RequestLimits` is an ASGI middleware around the app. It acts when the app first asks
for a request's body — after routing, before one byte of the body is read:

- on a guarded path (the `/api/v1` resources), the caller's token or session is checked
  from the headers; without a valid one the answer is 401 and the body is never read;
- the route's cap (`cap_for(scope)`: bytes, or None for a route that caps its own body)
  is checked against Content-Length (413 at once) and then against the bytes as they
  stream in (413 as soon as they pass it);
- every wait for more body is bounded by `body_timeout` seconds: a client that stops
  sending, or sends less than its Content-Length, is answered 408.

A response sent before its request's body was read whole says `Connection: close`, so
the server never goes on reading an unread body into the void. The refusals are
`RequestRefused`, which the app answers as RFC 9457 problems.
"""

from __future__ import annotations

from collections.abc import Callable

import anyio
from starlette.datastructures import Headers
from starlette.exceptions import HTTPException
from starlette.requests import cookie_parser
from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["Authenticated", "CapFor", "RequestLimits", "RequestRefused", "authenticated_by"]

#: whether the request's headers carry a valid token or session (a blocking call)
Authenticated = Callable[[Headers], bool]
#: the body cap of the route a (routed) request scope is for; None: the route caps its own
CapFor = Callable[[Scope], int | None]


class RequestRefused(HTTPException):
    """A request refused for its body: no credentials (401), too slow (408), too large (413)."""

    def __init__(self, status: int, title: str, detail: str) -> None:
        super().__init__(status, detail, headers={"Connection": "close"})
        self.title = title


class RequestLimits:
    def __init__(self, app: ASGIApp, authenticated: Authenticated, guarded: tuple[str, ...],
                 cap_for: CapFor, body_timeout: float) -> None:
        self.app = app
        self.authenticated = authenticated
        self.guarded = guarded
        self.cap_for = cap_for
        self.body_timeout = body_timeout

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        body = _Body(scope, receive, self)

        async def send_closing(message: Message) -> None:
            if message["type"] == "http.response.start" and not body.complete:
                message = {**message, "headers": [*message.get("headers", []),
                                                  (b"connection", b"close")]}
            await send(message)

        await self.app(scope, body.receive, send_closing)


class _Body:
    """One request's body as the app reads it: checked once, counted, timed."""

    def __init__(self, scope: Scope, receive: Receive, limits: RequestLimits) -> None:
        self.scope = scope
        self.headers = Headers(scope=scope)
        self.inner = receive
        self.limits = limits
        self.complete = not _has_body(self.headers)
        self.cap: int | None = None
        self.checked = False
        self.size = 0

    async def receive(self) -> Message:
        if self.complete:
            return await self.inner()
        if not self.checked:
            await self._check()
        with anyio.move_on_after(self.limits.body_timeout) as waited:
            message = await self.inner()
        if waited.cancelled_caught:
            raise RequestRefused(408, "Request Timeout", "the request body stalled for "
                                 f"{self.limits.body_timeout:g} s")
        if message["type"] == "http.request":
            self.size += len(message.get("body", b""))
            self._refuse_over(self.size)
        if message["type"] != "http.request" or not message.get("more_body", False):
            self.complete = True
        return message

    async def _check(self) -> None:
        """Before the first byte: the caller's credentials, then the declared size."""
        if self.scope["path"].startswith(self.limits.guarded):
            allowed = await anyio.to_thread.run_sync(self.limits.authenticated, self.headers)
            if not allowed:
                raise RequestRefused(401, "Unauthorized", "a valid bearer token is required")
        self.cap = self.limits.cap_for(self.scope)
        declared = self.headers.get("content-length", "")
        if declared.isdigit():
            self._refuse_over(int(declared))
        self.checked = True

    def _refuse_over(self, size: int) -> None:
        if self.cap is not None and size > self.cap:
            raise RequestRefused(413, "Content Too Large",
                                 f"the request body is over this route's {self.cap} bytes")


def _has_body(headers: Headers) -> bool:
    declared = headers.get("content-length")
    return "transfer-encoding" in headers or (declared is not None and declared.strip() != "0")


def authenticated_by(verify_token: Callable[[str], object | None],
                     verify_session: Callable[[str | None], object | None],
                     cookie: str) -> Authenticated:
    """`authenticated(headers)` as `api.routes.requirement` decides who is asking: a bearer
    token when there is an Authorization header, else the dashboard's session cookie."""
    def authenticated(headers: Headers) -> bool:
        authorization = headers.get("authorization")
        if authorization:
            scheme, _, secret = authorization.partition(" ")
            return scheme.lower() == "bearer" and verify_token(secret.strip()) is not None
        session = cookie_parser(headers.get("cookie", "")).get(cookie)
        return verify_session(session) is not None

    return authenticated
