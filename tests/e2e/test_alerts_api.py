"""`/api/v1/alerts` on both backends: scoped tokens, validation, no secret in any answer,
and a test alert to a loopback receiver."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime

import httpx
from test_api import bearer, serving
from webhook_receiver import Receiver, receiver

from ledger.bootstrap import Ledger
from workers.alert_delivery.notify import Notifier
from workers.fetching.addresses import AddressGuard
from workers.fetching.http import build_client

T0 = datetime(2026, 3, 1, 8, 0, tzinfo=UTC)


@asynccontextmanager
async def loopback_sender() -> AsyncIterator[Notifier]:
    guard = AddressGuard(["127.0.0.0/8"])
    async with build_client(guard=guard) as client:
        yield Notifier(client, guard)


def subscription(hook: Receiver, **changes: object) -> dict[str, object]:
    return {"name": "hoodies", "target_kind": "search", "target": "Hoodie",
            "triggers": [{"kind": "price_drop", "value": "10"}, {"kind": "back_in_stock"}],
            "channel": {"kind": "webhook", "url": hook.url, "secret": hook.secret}} | changes


def test_alerts_over_http(ledger: Ledger) -> None:
    with (receiver() as hook, serving(ledger, alert_sender=loopback_sender) as (url, tokens),
          httpx.Client(base_url=url) as http):
        read, operate = bearer(tokens["read"]), bearer(tokens["operate"])
        assert http.post("/api/v1/alerts", json=subscription(hook), headers=read).status_code == 403
        bad = http.post("/api/v1/alerts", headers=operate,
                        json=subscription(hook, triggers=[{"kind": "price_drop", "value": "-3"}]))
        assert bad.status_code == 422 and "price_drop" in bad.json()["detail"]
        made = http.post("/api/v1/alerts", json=subscription(hook), headers=operate)
        assert made.status_code == 201, made.text
        found = made.json()
        assert found["channel"] == hook.url and found["target"] == "hoodie"
        assert hook.secret not in made.text
        listed = http.get("/api/v1/alerts", headers=read)
        assert [s["id"] for s in listed.json()] == [found["id"]]
        assert hook.secret not in listed.text

        tested = http.post(f"/api/v1/alerts/{found['id']}/test", headers=operate)
        assert tested.json() == {"delivered": True, "status": 200, "error": ""}
        (request,) = hook.requests
        assert request.signature_ok and request.key.startswith(f"test:{found['id']}:")

        gone = http.delete(f"/api/v1/alerts/{found['id']}", headers=operate)
        assert gone.status_code == 200 and gone.json()["removed_at"]
        assert http.get("/api/v1/alerts", headers=read).json() == []
        assert http.delete(f"/api/v1/alerts/{found['id']}", headers=operate).status_code == 409
        assert http.get("/api/v1/alerts/nope", headers=read).status_code == 404
    events = ledger.source.read(0, 100)
    assert [e.event_type for e in events] == [
        "Subscription.Created", "Subscription.Tested", "Subscription.Removed"]
    # each a command of the dispatcher, naming the token that asked
    assert {(e.payload["actor"], e.payload["surface"]) for e in events} == {
        ("token:operate (operate)", "api")}
    assert events[1].payload["delivered"] is True
