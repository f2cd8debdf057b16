"""`/api/v1/schedule`: time-slot load spreading (`runtime/slots.py`) over HTTP.

`GET /schedule/distribution?slot_seconds=&hours=` — runs per slot and the spread score;
`POST /schedule/rebalance` (`{"apply", "slot_seconds", "hours"}`) — the moves, and the
score before and after; with `apply` each move is recorded (`Rescheduled`, its reason).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query
from pydantic import BaseModel, Field

from api.auth import Token
from api.consistency import Writes
from runtime.clock import Clock
from runtime.commands import token_origin
from runtime.ledger import Ledger
from runtime.slots import HORIZON, SLOT, Distribution, planned_load, rebalance

__all__ = ["build_schedule_router"]


class Rebalance(BaseModel):
    apply: bool = False
    slot_seconds: int = Field(default=SLOT, ge=60, le=86400)
    hours: int = Field(default=HORIZON // 3600, ge=1, le=720)


def _shown(found: Distribution) -> dict[str, Any]:
    return {"start": found.start.isoformat(), "slot_seconds": found.slot,
            "counts": found.counts, "score": found.score}


def build_schedule_router(ledger: Ledger, clock: Clock, writes: Writes,
                          read: Callable[..., Any], operate: Callable[..., Any]) -> APIRouter:
    router = APIRouter(prefix="/schedule", tags=["schedule"])

    @router.get("/distribution", dependencies=[Depends(read)])
    def show(slot_seconds: Annotated[int, Query(ge=60, le=86400)] = SLOT,
             hours: Annotated[int, Query(ge=1, le=720)] = HORIZON // 3600) -> dict[str, Any]:
        if slot_seconds > hours * 3600:
            raise ValueError("slot_seconds must not be longer than the horizon (hours)")
        found, _ = planned_load(ledger, clock.now(), slot_seconds, hours * 3600)
        return _shown(found)

    @router.post("/rebalance")
    def move(body: Rebalance, token: Token = Depends(operate)) -> dict[str, Any]:  # noqa: B008
        if body.slot_seconds > body.hours * 3600:
            raise ValueError("slot_seconds must not be longer than the horizon (hours)")
        writes.settle()  # plan from read models that have this server's writes
        with writes:
            moves, before, after = rebalance(ledger, clock.now(), body.apply, body.slot_seconds,
                                             body.hours * 3600,
                                             token_origin(token.name, token.scope, "api"))
        return {"applied": body.apply, "score_before": before.score,
                "score_after": after.score, "before": _shown(before), "after": _shown(after),
                "moves": [{"job_id": m.job_id, "before": m.before.isoformat(),
                           "after": m.after.isoformat(), "reason": m.reason} for m in moves]}

    return router
