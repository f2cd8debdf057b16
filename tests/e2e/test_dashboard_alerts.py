"""The dashboard's alerts page on both backends, over HTTP: an operator adds a
subscription (its channel admitted by the sender's egress policy), sends a test to a
loopback webhook receiver and removes it after a confirmation page; each change is a
command whose events name the signed-in token, and the page shows who did it. A bad
form is refused with one line and records nothing; a read-scope session sees no form
and is refused if it posts one."""

from __future__ import annotations

import re

import httpx
from test_alerts_api import loopback_sender
from test_api import serving
from webhook_receiver import receiver

from ledger.bootstrap import Ledger


def csrf(page: str) -> str:
    found = re.search(r'name="csrf" value="([^"]+)"', page)
    assert found, "the page carries no CSRF field"
    return found.group(1)


def form(hook_url: str, secret: str, **changes: str | list[str]) -> dict[str, str | list[str]]:
    return {"name": "hoodies", "target_kind": "search", "target": "Hoodie",
            "trigger": ["price_drop", "back_in_stock"], "value_price_drop": "10",
            "channel_kind": "webhook", "url": hook_url, "secret": secret,
            "reason": "watch the hoodies"} | changes


def test_add_test_and_remove_an_alert_from_the_dashboard(ledger: Ledger) -> None:
    with (receiver() as hook, serving(ledger, alert_sender=loopback_sender) as (url, tokens),
          httpx.Client(base_url=url) as browser):
        browser.post("/login", data={"token": tokens["operate"], "next": "/"})
        page = browser.get("/alerts")
        assert page.status_code == 200 and 'id="new-alert"' in page.text
        secret = csrf(page.text)

        bad = browser.post("/alerts", data={**form(hook.url, hook.secret, trigger=[]),
                                            "csrf": secret})
        assert bad.status_code == 422 and "choose at least one trigger" in bad.text
        far = browser.post("/alerts", data={**form("http://10.1.2.3/hook", hook.secret),
                                            "csrf": secret})
        assert far.status_code == 422  # the egress policy refuses the address
        assert ledger.alerts.subscriptions(include_removed=True) == []  # nothing recorded

        made = browser.post("/alerts", data={**form(hook.url, hook.secret), "csrf": secret})
        assert made.status_code == 303 and made.headers["location"] == "/alerts"
        ledger.catch_up()
        (row,) = ledger.alerts.subscriptions()
        subscription = row["subscription_id"]
        listed = browser.get("/alerts").text
        assert f'data-subscription="{subscription}"' in listed and "added" in listed
        assert "by token:operate (operate) via dashboard" in listed
        assert hook.secret not in listed and "price drop 10" in listed

        tested = browser.post(f"/alerts/{subscription}/test", data={"csrf": secret})
        assert tested.status_code == 303
        (request,) = hook.requests
        assert request.signature_ok and request.key.startswith(f"test:{subscription}:")
        after_test = browser.get("/alerts").text
        assert "test delivered" in after_test
        assert re.search(r'class="last-test">.*delivered.*HTTP 200.*by token:operate',
                         after_test)

        asked = browser.post(f"/alerts/{subscription}/remove", data={"csrf": secret})
        assert asked.status_code == 200 and 'id="confirm-yes"' in asked.text  # asks first
        assert ledger.app.get_subscription(subscription).removed is False
        gone = browser.post(f"/alerts/{subscription}/remove",
                            data={"csrf": secret, "confirmed": "1", "reason": "sold out"})
        assert gone.status_code == 303
        page_after = browser.get("/alerts").text
        assert 'id="removed"' in page_after and "No alert subscription yet." in page_after

    events = [e for e in ledger.source.read(0, 1000) if e.stream_id == subscription]
    assert [e.event_type for e in events] == ["Subscription.Created", "Subscription.Tested",
                                              "Subscription.Removed"]
    assert all(e.payload["actor"] == "token:operate (operate)" for e in events)
    assert all(e.payload["surface"] == "dashboard" for e in events)
    assert events[0].payload["reason"] == "watch the hoodies"
    assert events[1].payload["delivered"] is True and events[1].payload["status"] == 200
    assert events[2].payload["reason"] == "sold out"


def test_a_read_session_cannot_add_or_remove_alerts(ledger: Ledger) -> None:
    with (receiver() as hook, serving(ledger, alert_sender=loopback_sender) as (url, tokens),
          httpx.Client(base_url=url) as browser):
        browser.post("/login", data={"token": tokens["read"], "next": "/"})
        page = browser.get("/alerts")
        assert page.status_code == 200 and 'id="new-alert"' not in page.text
        secret = csrf(page.text)  # the sign-out form's
        refused = browser.post("/alerts", data={**form(hook.url, hook.secret), "csrf": secret})
        assert refused.status_code == 403
    assert ledger.alerts.subscriptions(include_removed=True) == []
