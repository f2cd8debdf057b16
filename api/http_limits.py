"""What a request may cost before it is answered: auth before its body, its body timed.

`RequestLimits` is an ASGI middleware around the whole app. It watches the request body
as the app reads it:

- on a guarded path (the `/api/v1` resources), the caller's credentials are checked from
  the headers when the app first asks for the body — before one byte of it is read or
  parsed — and a request without a valid token or session is answered 401 there;
- every wait for more body is bounded by `body_timeout` seconds: a client that stops
  sending (or sends less than its Content-Length) is answered 408;
- a response sent before its request's body was read whole says `Connection: close`,
  so the server never keeps reading an unread body into the void.

The size of a body is capped by FastAPI's `max_body_size` (the app's default and each
route's own, `api.app`): 413 before reading when Content-Length is over the cap, and as
soon as the streamed bytes pass it otherwise. These refusals are `RequestRefused`, which
the app answers as RFC 9457 problems.
"""

from __future__ import annotations

from collections.abc import Callable

import anyio
from starlette.datastructures import Headers
from starlette.exceptions import HTTPException
from starlette.requests import cookie_parser
from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["RequestLimits", "RequestRefused", "authenticated_by"]

#: answers whether the request's headers carry a valid token or session (a blocking call)
Authenticated = Callable[[Headers], bool]


class RequestRefused(HTTPException):
    """A request refused before its body was read (401, 408) or because of its size (413)."""

    def __init__(self, status: int, title: str, detail: str) -> None:
        super().__init__(status, detail, headers={"Connection": "close"})
        self.title = title


class RequestLimits:
    def __init__(self, app: ASGIApp, authenticated: Authenticated, guarded: tuple[str, ...],
                 body_timeout: float) -> None:
        self.app = app
        self.authenticated = authenticated
        self.guarded = guarded
        self.body_timeout = body_timeout

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        body = _Body(scope, receive, self, scope["path"].startswith(self.guarded))

        async def send_closing(message: Message) -> None:
            if message["type"] == "http.response.start" and not body.complete:
                message = {**message, "headers": [*message.get("headers", []),
                                                  (b"connection", b"close")]}
            await send(message)

        await self.app(scope, body.receive, send_closing)


class _Body:
    """One request's body as the app reads it: gated, timed, and whether it was read whole."""

    def __init__(self, scope: Scope, receive: Receive, limits: RequestLimits,
                 guarded: bool) -> None:
        self.headers = Headers(scope=scope)
        self.inner = receive
        self.limits = limits
        self.complete = not _has_body(self.headers)
        self.gated = not guarded

    async def receive(self) -> Message:
        if self.complete:
            return await self.inner()
        if not self.gated:
            await self._gate()
        with anyio.move_on_after(self.limits.body_timeout) as waited:
            message = await self.inner()
        if waited.cancelled_caught:
            raise RequestRefused(408, "Request Timeout",
                                 f"the request body stalled for {self.limits.body_timeout:g} s")
        if message["type"] != "http.request" or not message.get("more_body", False):
            self.complete = True
        return message

    async def _gate(self) -> None:
        allowed = await anyio.to_thread.run_sync(self.limits.authenticated, self.headers)
        if not allowed:
            raise RequestRefused(401, "Unauthorized", "a valid bearer token is required")
        self.gated = True


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
