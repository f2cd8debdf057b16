"""The dashboard's alerts page (`/alerts`): subscriptions with who created them and
their latest test, the latest deliveries, and the actions `/api/v1/alerts` offers —
add a subscription, send a test, remove one (after a confirmation page).

Every action is a command sent to the one dispatcher (`runtime.commands`:
`AddSubscription`, `TestAlert`, `RemoveSubscription`) with the signed-in token as its
actor. A channel is admitted by the alert sender's egress policy before anything is
recorded (`runtime.alert_channels.admit_channel`); its URL and secret go in and are
never shown. Without an alert sender (a server started without one) the page stays
read-only and says so.
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse, Response

from api.alert_routes import AlertSender
from api.dashboard_kit import PageKit, Refused, first_field
from domain.alert import CHANNEL_KINDS, TARGET_KINDS, TRIGGER_KINDS, Subscription
from domain.errors import LedgerError
from runtime.alert_channels import (
    Channel,
    NewSubscription,
    admit_channel,
    channel_to_test,
    sample_message,
    shown_subscription,
)
from runtime.clock import Clock
from runtime.commands import AddSubscription, Origin, RemoveSubscription, TestAlert, token_origin
from runtime.ledger import Ledger

__all__ = ["DELIVERIES", "REMOVED", "add_alert_pages"]

#: deliveries and removed subscriptions shown on the page
DELIVERIES, REMOVED = 50, 20


def add_alert_pages(router: APIRouter, kit: PageKit, ledger: Ledger, clock: Clock,
                    sender: AlertSender | None) -> None:
    """The alerts page and its actions; actions are sent through `kit.call` (the
    server's writes), reads read the read models as the projector left them."""

    def origin(request_fields: dict[str, list[str]], who: Any) -> Origin:
        return token_origin(who[1].name, who[1].scope, "dashboard",
                            first_field(request_fields, "reason")[:500])

    @router.get("/alerts")
    def alerts(request: Request) -> Response:
        who = kit.viewer(request)
        if who is None:
            return kit.to_login(request)
        rows = [shown_subscription(r)
                for r in ledger.alerts.subscriptions(include_removed=True)]
        deliveries = ledger.alerts.deliveries(limit=DELIVERIES)
        found = ledger.app.find_many(Subscription, [UUID(r["subscription_id"]) for r in rows])
        for row in rows:
            aggregate = found.get(UUID(row["subscription_id"]))
            row.update(created_by=aggregate and aggregate.created_by,
                       created_via=aggregate and aggregate.created_via,
                       removed_by=aggregate and aggregate.removed_by,
                       last_test=aggregate and aggregate.last_test)
        active = [r for r in rows if not r["removed_at"]]
        removed = sorted((r for r in rows if r["removed_at"]), key=lambda r: r["removed_at"],
                         reverse=True)[:REMOVED]
        names = {r["subscription_id"]: r["name"] or r["target"] for r in rows}
        return kit.render(request, "alerts.html", who, subscriptions=active, removed=removed,
                          deliveries=deliveries, names=names, outcomes=who[0].take_flash(),
                          can_add=sender is not None, target_kinds=TARGET_KINDS,
                          trigger_kinds=TRIGGER_KINDS, channel_kinds=CHANNEL_KINDS)

    @router.post("/alerts")
    async def add(request: Request) -> Response:
        try:
            who, fields = await kit.acting(request)
            if sender is None:
                raise Refused(409, "this server has no alert sender: alerts cannot be added here")
            try:
                channel = Channel(first_field(fields, "channel_kind"),
                                  first_field(fields, "url").strip()[:4000],
                                  first_field(fields, "secret").strip()[:4000] or None)
                async with sender() as notifier:
                    admitted = await admit_channel(notifier, channel)
                new = NewSubscription(first_field(fields, "name").strip()[:200],
                                      first_field(fields, "target_kind"),
                                      first_field(fields, "target")[:400],
                                      _triggers(fields), admitted)
                made = await kit.call(ledger.commands.send, AddSubscription(new, origin(fields, who)),
                                clock.now())
            except (LedgerError, ValueError) as error:
                raise Refused(422, str(error)) from None
        except Refused as error:
            return await kit.refused(request, error)
        await kit.remember(who, {str(made): "added"})
        return RedirectResponse("/alerts", status_code=303)

    @router.post("/alerts/{subscription_id}/test")
    async def test(request: Request, subscription_id: str) -> Response:
        try:
            who, fields = await kit.acting(request)
            try:
                if sender is None:
                    raise Refused(409, "this server has no alert sender to test with")
                found, channel = await kit.call(lambda: channel_to_test(
                    ledger.app, ledger.commands.channels(), subscription_id))
                body, headers = sample_message(str(found), clock.now())
                async with sender() as notifier:
                    outcome = await notifier.send(channel, body, headers)
                await kit.call(ledger.commands.send, TestAlert(
                    found, outcome.ok, outcome.status, outcome.error, origin(fields, who)),
                         clock.now())
            except (LedgerError, ValueError) as error:
                raise Refused(409, str(error)) from None
        except Refused as error:
            return await kit.refused(request, error)
        await kit.remember(who, {str(found): "test delivered" if outcome.ok
                                      else f"test not delivered: {outcome.error}"})
        return RedirectResponse("/alerts", status_code=303)

    @router.post("/alerts/{subscription_id}/remove")
    async def remove(request: Request, subscription_id: str) -> Response:
        try:
            who, fields = await kit.acting(request)
            try:
                subscription = await kit.call(ledger.app.get_subscription, subscription_id)
                if first_field(fields, "confirmed") != "1":
                    return kit.render(request, "alert_confirm.html", who,
                                      subscription=subscription,
                                      reason=first_field(fields, "reason"))
                await kit.call(ledger.commands.send,
                         RemoveSubscription(subscription.id, origin(fields, who)), clock.now())
            except (LedgerError, ValueError) as error:
                raise Refused(409, str(error)) from None
        except Refused as error:
            return await kit.refused(request, error)
        await kit.remember(who, {str(subscription.id): "removed"})
        return RedirectResponse("/alerts", status_code=303)


def _triggers(fields: dict[str, list[str]]) -> list[dict[str, Any]]:
    """The form's triggers: each `trigger` kind with its `value_<kind>` (when it takes one)."""
    kinds = [k for k in fields.get("trigger") or [] if k][:8]
    if not kinds:
        raise ValueError("choose at least one trigger")
    return [{"kind": kind, "value": first_field(fields, f"value_{kind}").strip()[:40] or None}
            for kind in kinds]
