"""A store's crawl delay changed from the dashboard's stores page, on both backends: the
change is a command whose `Store.PolicyChanged` names the signed-in token; a bad value is
refused with one line and records nothing."""

from __future__ import annotations

import httpx
from test_api import serving
from test_dashboard_alerts import csrf

from ledger.bootstrap import Ledger
from runtime.clock import SystemClock


def changes(ledger: Ledger, store: str) -> list[dict[str, object]]:
    return [e.payload for e in ledger.source.read(0, 10_000)
            if e.event_type == "Store.PolicyChanged" and e.stream_id == store]


def test_a_crawl_delay_change_records_who_made_it(ledger: Ledger) -> None:
    store = str(ledger.app.register_store(name="Shop", base_url="https://shop.example",
                                          platform="generic", now=SystemClock().now()))
    ledger.catch_up()
    with serving(ledger) as (url, tokens), httpx.Client(base_url=url) as browser:
        browser.post("/login", data={"token": tokens["operate"], "next": "/"})
        secret = csrf(browser.get("/stores").text)
        bad = browser.post(f"/stores/{store}/policy", data={"csrf": secret,
                                                           "crawl_delay": "-1"})
        assert bad.status_code == 422 and changes(ledger, store) == []
        done = browser.post(f"/stores/{store}/policy", data={"csrf": secret,
                                                            "crawl_delay": "2.5"})
        assert done.status_code == 303
    (changed,) = changes(ledger, store)
    assert changed["crawl_delay"] == 2.5
    assert (changed["actor"], changed["surface"]) == ("token:operate (operate)", "dashboard")
