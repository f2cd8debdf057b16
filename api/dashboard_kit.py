"""What the dashboard's page modules share: the refusal answered with a status page,
a form field's first value, and the page helpers `build_dashboard` hands to the page
modules it composes (`api.dashboard_tools`)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from fastapi import Request
from fastapi.responses import HTMLResponse, RedirectResponse

from api.auth import Token
from api.sessions import Session

__all__ = ["PageKit", "Refused", "first_field"]

Who = tuple[Session, Token]


class Refused(Exception):
    """A dashboard request that is answered with a status page (403, 404, 422)."""

    def __init__(self, status: int, detail: str) -> None:
        super().__init__(detail)
        self.status, self.detail = status, detail


def first_field(fields: dict[str, list[str]], name: str) -> str:
    return (fields.get(name) or [""])[0]


@dataclass(frozen=True)
class PageKit:
    """The signed-in viewer, rendering, the sign-in redirect, a checked operator form,
    the refusal page and a write (`api.consistency.Writes`)."""

    viewer: Callable[[Request], Who | None]
    render: Callable[..., HTMLResponse]
    to_login: Callable[[Request], RedirectResponse]
    acting: Callable[[Request], Awaitable[tuple[Who, dict[str, list[str]]]]]
    #: the refusal page, awaited (it reads the signed-in viewer off the event loop)
    refused: Callable[[Request, Refused], Awaitable[HTMLResponse]]
    #: a write, awaited: it runs on a worker thread, never on the event loop
    call: Callable[..., Awaitable[Any]]
    #: the outcomes the next page shows once, kept off the event loop
    remember: Callable[[Who, dict[str, str]], Awaitable[None]]
