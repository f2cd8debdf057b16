"""`/api/v1/tokens` (admin): create, list and revoke API tokens over HTTP, as
`crawl-ledger serve token …` does. A token's secret is in the creation answer only;
listings carry id, name, scope and times, never a secret or its hash."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import asdict
from typing import Any, Literal

from fastapi import APIRouter, Depends
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field

from api.auth import Token, TokenStore
from api.routes import ApiProblem
from runtime.clock import Clock

__all__ = ["TokenIn", "build_tokens_router"]


class TokenIn(BaseModel):
    name: str = Field(min_length=1, max_length=200, pattern=r"^[^\x00-\x1f\x7f]+$")
    scope: Literal["read", "operate", "admin", "bot"]


def _listed(token: Token) -> dict[str, Any]:
    return asdict(token)


def build_tokens_router(tokens: TokenStore, clock: Clock, lock: threading.RLock,
                        admin: Callable[..., Any]) -> APIRouter:
    router = APIRouter(tags=["tokens"], dependencies=[Depends(admin)])

    @router.post("/tokens", status_code=201)
    def create_token(body: TokenIn) -> JSONResponse:
        """A new token; its secret is in this answer and nowhere else."""
        with lock:
            secret, token = tokens.create(body.scope, body.name, clock.now())
        return JSONResponse(dict(_listed(token), token=secret), 201)

    @router.get("/tokens")
    def list_tokens() -> JSONResponse:
        """Every token, revoked ones with their revocation time (no secrets)."""
        with lock:
            listed = [_listed(token) for token in tokens.list()]
        return JSONResponse({"items": listed})

    @router.delete("/tokens/{token_id}")
    def revoke_token(token_id: str) -> JSONResponse:
        """Revoke a live token (404 when there is no live token with this id)."""
        with lock:
            revoked = tokens.revoke(token_id, clock.now())
        if not revoked:
            raise ApiProblem(404, "Not Found", f"no live token {token_id}")
        return JSONResponse({"id": token_id, "revoked": True})

    return router
