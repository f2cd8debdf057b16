"""`/api/v1/alerts`: price and stock alert subscriptions over HTTP (`runtime/alert_step.py`).

`GET /alerts` (read), `POST /alerts` (operate), `GET /alerts/{id}` with its latest
deliveries (read), `DELETE /alerts/{id}` and `POST /alerts/{id}/test` (operate). Each
change is a command of the one dispatcher (`runtime.commands`) whose events name the
token as the actor, `api` as the surface and the optional `reason`. A
channel's URL and secret go in and never come out: responses show the channel's
display form only. A channel is refused unless the sender's egress policy
admits it (`workers.alert_delivery.channels`).
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from typing import Any

from fastapi import APIRouter, Depends, Query
from fastapi.concurrency import run_in_threadpool
from pydantic import BaseModel, Field

from api.auth import Token
from api.consistency import Writes
from domain.errors import InvalidInput, NotFound
from runtime.alert_channels import (
    Channel,
    NewSubscription,
    SenderPort,
    admit_channel,
    channel_to_test,
    sample_message,
    shown_subscription,
)
from runtime.clock import Clock
from runtime.commands import AddSubscription, Origin, RemoveSubscription, TestAlert, token_origin
from runtime.ledger import Ledger

__all__ = ["AlertSender", "build_alerts_router"]

#: opens the alert sender for one test send (the composition root's `notifier_for`)
AlertSender = Callable[[], AbstractAsyncContextManager[SenderPort]]


class TriggerIn(BaseModel):
    kind: str = Field(max_length=40)
    value: str | None = Field(default=None, max_length=40)


class ChannelIn(BaseModel):
    kind: str = Field(max_length=20)
    url: str = Field(max_length=4000)
    secret: str | None = Field(default=None, max_length=4000)


class SubscriptionIn(BaseModel):
    name: str = Field(default="", max_length=200)
    target_kind: str = Field(max_length=20)
    target: str = Field(max_length=400)
    triggers: list[TriggerIn] = Field(max_length=8)
    channel: ChannelIn


def build_alerts_router(ledger: Ledger, clock: Clock, writes: Writes,
                        read: Callable[..., Any], operate: Callable[..., Any],
                        sender: AlertSender | None) -> APIRouter:
    router = APIRouter(prefix="/alerts", tags=["alerts"])
    # defaults, not `Annotated`: the annotations are strings resolved in module scope
    operator = Depends(operate)
    why = Query(None, max_length=500)

    def by(token: Token, reason: str | None) -> Origin:
        return token_origin(token.name, token.scope, "api", reason)

    def shown(subscription_id: str) -> dict[str, Any]:
        row = ledger.alerts.subscription(subscription_id)
        if row is None:
            raise NotFound(f"unknown subscription id {subscription_id}")
        return {**shown_subscription(row),
                "deliveries": ledger.alerts.deliveries(subscription_id, limit=20)}

    @router.get("", dependencies=[Depends(read)])
    def list_alerts() -> list[dict[str, Any]]:
        return [shown_subscription(r) for r in ledger.alerts.subscriptions()]

    @router.post("", status_code=201)
    async def create(body: SubscriptionIn, token: Token = operator,
                     reason: str | None = why) -> dict[str, Any]:
        if sender is None:
            raise InvalidInput("this server has no alert sender: alerts cannot be added here")
        async with sender() as notifier:
            admitted = await admit_channel(notifier, Channel(
                body.channel.kind, body.channel.url, body.channel.secret))
        new = NewSubscription(body.name, body.target_kind, body.target,
                              [t.model_dump() for t in body.triggers], admitted)
        return await run_in_threadpool(_add, new, by(token, reason))

    def _add(new: NewSubscription, origin: Origin) -> dict[str, Any]:
        with writes:
            made = ledger.commands.send(AddSubscription(new, origin), clock.now())
        return shown(str(made))

    @router.get("/{subscription_id}", dependencies=[Depends(read)])
    def show(subscription_id: str) -> dict[str, Any]:
        return shown(str(ledger.app.get_subscription(subscription_id).id))

    @router.delete("/{subscription_id}")
    def remove(subscription_id: str, token: Token = operator,
               reason: str | None = why) -> dict[str, Any]:
        with writes:
            ledger.commands.send(RemoveSubscription(subscription_id, by(token, reason)),
                                 clock.now())
        return shown(str(ledger.app.get_subscription(subscription_id).id))

    @router.post("/{subscription_id}/test")
    async def test(subscription_id: str, token: Token = operator,
                   reason: str | None = why) -> dict[str, Any]:
        """Send a sample alert to the subscription's channel; the outcome is recorded
        (`Subscription.Tested`) with who asked."""
        found, channel = channel_to_test(ledger.app, ledger.commands.channels(),
                                         subscription_id)
        if sender is None:
            raise InvalidInput(f"subscription {found} has no channel to test here")
        body, headers = sample_message(str(found), clock.now())
        async with sender() as notifier:
            outcome = await notifier.send(channel, body, headers)
        await run_in_threadpool(_send, TestAlert(found, outcome.ok, outcome.status,
                                                 outcome.error, by(token, reason)))
        return {"delivered": outcome.ok, "status": outcome.status, "error": outcome.error}

    def _send(command: TestAlert) -> None:
        with writes:
            ledger.commands.send(command, clock.now())

    return router
