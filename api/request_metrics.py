"""Request latency and error counts, labelled only from fixed sets.

A client chooses a request's method and path, so neither may become a label as it is:
every distinct label value is a new series that `/metrics` carries for the life of the
process. The method label is one of `METHODS` or `other`; the route label is the
template of the route that answered (`/api/v1/jobs/{job_id}`, `/login`,
`/static/{path}`) or `unmatched`; the status is the one this app sent.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["METHODS", "UNMATCHED", "RequestMetrics", "route_template"]

METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
#: the method label of any other method
OTHER = "other"
#: the route label of a request no route answered
UNMATCHED = "unmatched"

#: observe(method, route, status, seconds)
Observe = Callable[[str, str, int, float], None]


class RequestMetrics:
    """ASGI middleware: after each HTTP response, `observe(method, route, status, seconds)`."""

    def __init__(self, app: ASGIApp, observe: Observe) -> None:
        self.app = app
        self.observe = observe

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started, status = time.perf_counter(), 500

        async def send_observed(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, send_observed)
        finally:
            method = scope["method"] if scope["method"] in METHODS else OTHER
            self.observe(method, route_template(scope), status, time.perf_counter() - started)


def route_template(scope: Scope) -> str:
    """The template of the route that matched (its router's prefix included), else
    `unmatched`. The routes of an included router keep their own path (`/jobs/{job_id}`):
    the prefix is the part of the request path before what that route's pattern matches.
    A mount (`/static`) is `/static/{path}`."""
    route = scope.get("route")
    template, pattern = getattr(route, "path_format", None), getattr(route, "path_regex", None)
    if not isinstance(template, str) or pattern is None:
        mounted = scope.get("root_path", "")  # a mount (static files) sets its own path here
        return f"{mounted}/{{path}}" if mounted else UNMATCHED
    path: str = scope["path"]
    for cut, char in enumerate(path):
        if char == "/" and pattern.match(path[cut:]):
            return path[:cut] + template
    return UNMATCHED
