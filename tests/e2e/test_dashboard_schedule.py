"""The dashboard's schedule page on both backends, over HTTP: an operator rebalances the
next runs from it — a preview first (how many runs move, the spread score before and
after) that records nothing, then the moves once confirmed, each naming who asked; a read-scope session sees no
form and is refused if it posts one."""

from __future__ import annotations

from datetime import timedelta

import httpx
from test_api import serving
from test_dashboard_alerts import csrf

from ledger.bootstrap import Ledger
from runtime.clock import SystemClock


def crowded(ledger: Ledger) -> None:
    """Twelve hourly jobs whose next runs all fall in one 15-minute slot."""
    now = SystemClock().now()
    for i in range(12):
        ledger.app.schedule_job(kind="catalog", url=f"https://s{i}.example/c", now=now,
                                every=3600, start_at=now + timedelta(minutes=20))
    ledger.catch_up()


def moved(ledger: Ledger) -> int:
    return len(moves(ledger))


def moves(ledger: Ledger) -> list[dict[str, object]]:
    return [e.payload for e in ledger.source.read(0, 10_000)
            if e.event_type == "CrawlJob.Rescheduled"]


def test_rebalance_from_the_schedule_page_previews_then_moves(ledger: Ledger) -> None:
    crowded(ledger)
    with serving(ledger) as (url, tokens), httpx.Client(base_url=url) as browser:
        browser.post("/login", data={"token": tokens["operate"], "next": "/"})
        page = browser.get("/schedule")
        assert page.status_code == 200 and 'id="rebalance"' in page.text
        secret = csrf(page.text)

        preview = browser.post("/schedule/rebalance",
                               data={"csrf": secret, "slot": "900", "hours": "24"})
        assert preview.status_code == 200 and 'id="confirm-yes"' in preview.text
        assert moved(ledger) == 0  # a preview records nothing
        asked = int(preview.text.split("<h1>Move ")[1].split(" ")[0])
        assert asked > 0

        done = browser.post("/schedule/rebalance", data={"csrf": secret, "slot": "900",
                                                         "hours": "24", "confirmed": "1"})
        assert done.status_code == 303
        assert done.headers["location"] == "/schedule?slot=900&hours=24"
        assert moved(ledger) == asked
        assert {(m["actor"], m["surface"]) for m in moves(ledger)} == {
            ("token:operate (operate)", "dashboard")}  # who moved them, and from where
        assert f"{asked} next runs moved" in browser.get("/schedule").text


def test_a_read_session_cannot_rebalance(ledger: Ledger) -> None:
    crowded(ledger)
    with serving(ledger) as (url, tokens), httpx.Client(base_url=url) as browser:
        browser.post("/login", data={"token": tokens["read"], "next": "/"})
        page = browser.get("/schedule")
        assert page.status_code == 200 and 'id="rebalance"' not in page.text
        refused = browser.post("/schedule/rebalance", data={
            "csrf": csrf(page.text) if 'name="csrf"' in page.text else "", "confirmed": "1"})
        assert refused.status_code == 403
    assert moved(ledger) == 0
