"""`/api/v1/proxies`: the egress proxy pool over HTTP (`runtime/proxy_pool.py`).

`GET /proxies` (read), `POST /proxies` (operate), `POST /proxies/{id}/disable` and
`POST /proxies/{id}/enable` (operate). A proxy's URL (with its credentials) goes
in and never comes out: responses show its address only.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fastapi import APIRouter, Depends
from fastapi.concurrency import run_in_threadpool
from pydantic import BaseModel, Field

from api.auth import Token
from api.consistency import Writes
from domain.errors import NotFound
from runtime.clock import Clock
from runtime.commands import DisableProxy, EnableProxy, token_origin
from runtime.ledger import Ledger
from runtime.proxy_pool import AddressGuard, add_proxy, proxy_guard, proxy_rows
from runtime.tables import ProxyTable

__all__ = ["build_proxies_router"]


class ProxyIn(BaseModel):
    url: str = Field(max_length=2000)
    region: str | None = Field(default=None, max_length=64)


class DisableIn(BaseModel):
    reason: str = Field(default="", max_length=400)


def build_proxies_router(ledger: Ledger, clock: Clock, writes: Writes,
                         read: Callable[..., Any], operate: Callable[..., Any],
                         guard: AddressGuard | None) -> APIRouter:
    router = APIRouter(prefix="/proxies", tags=["proxies"])
    operator = Depends(operate)  # a default, not `Annotated`: annotations are strings here
    stores: list[ProxyTable] = []
    checked_by = proxy_guard(guard)

    def store() -> ProxyTable:
        if not stores:
            stores.append(ledger.tables.proxies)
        return stores[0]

    def listed() -> list[dict[str, Any]]:
        return [dict(r, id=r["proxy_id"]) for r in proxy_rows(ledger, store())]

    def shown(proxy_id: str) -> dict[str, Any]:
        found = next((r for r in listed() if r["id"] == proxy_id), None)
        if found is None:
            raise NotFound(f"unknown proxy id {proxy_id}")
        return found

    @router.get("", dependencies=[Depends(read)])
    def list_proxies() -> list[dict[str, Any]]:
        return listed()

    @router.post("", dependencies=[Depends(operate)], status_code=201)
    async def add(body: ProxyIn) -> dict[str, Any]:
        with writes.lock:
            proxy_id = await add_proxy(ledger, store(), checked_by, body.url, body.region,
                                       clock.now())
        await run_in_threadpool(writes.settle)  # not on the event loop: it may wait
        return shown(str(proxy_id))

    @router.post("/{proxy_id}/disable")
    def disable(proxy_id: str, body: DisableIn | None = None,
                token: Token = operator) -> dict[str, Any]:
        origin = token_origin(token.name, token.scope, "api", body.reason if body else None)
        with writes:
            ledger.commands.send(DisableProxy(proxy_id, origin), clock.now())
        return shown(str(ledger.app.get_proxy(proxy_id).id))

    @router.post("/{proxy_id}/enable")
    def enable(proxy_id: str, token: Token = operator) -> dict[str, Any]:
        with writes:
            ledger.commands.send(EnableProxy(proxy_id, token_origin(token.name, token.scope,
                                                                    "api")), clock.now())
        return shown(str(ledger.app.get_proxy(proxy_id).id))

    return router
