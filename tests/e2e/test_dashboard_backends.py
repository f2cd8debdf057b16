"""The dashboard's pages and queries on both backends (SQLite and PostgreSQL), over
HTTP without a browser: text search (with LIKE's wildcards taken literally), sort,
price range, counts, and the sign-in, CSRF and scope rules at the HTTP level."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import httpx
from test_api import serving

from domain.values import CrawlFailure, CrawlSuccess, Observation, Offer
from ledger.bootstrap import Ledger
from projections.dashboard import DashboardQueries

T0 = datetime(2026, 3, 1, 8, 0, tzinfo=UTC)


def seeded(ledger: Ledger) -> tuple[str, list[str]]:
    app = ledger.app
    store = str(app.register_store(name="Shop", base_url="https://shop.example",
                                   platform="shopify", now=T0))
    jobs = [str(app.schedule_job(kind="product_page", url=f"https://shop.example/p/{name}",
                                 now=T0 + timedelta(minutes=i), store_id=store))
            for i, name in enumerate(("blue_dream", "blue-dream", "red%sale", "green"))]
    task = app.lease(jobs[0], "w", 300, T0)
    prices = {"Blue Dream": "9.50", "Blue_Dream Haze": "12.00", "Red 100% Sale": "100.00"}
    app.record_success(jobs[0], task.lease_id, CrawlSuccess(
        200, task.url, "shopify", "shopify/1", "h1", observations=tuple(
            Observation(provider_product_id=name, name=name, url=task.url,
                        offers=(Offer("one", Decimal(price), "EUR"),))
            for name, price in prices.items())), T0)
    later = T0 + timedelta(minutes=5)
    task = app.lease(jobs[3], "w", 300, later)
    app.record_failure(jobs[3], task.lease_id, CrawlFailure("http_5xx", "502", True), later)
    ledger.catch_up()
    return store, jobs


def test_queries_on_both_backends(ledger: Ledger) -> None:
    store, jobs = seeded(ledger)
    queries = DashboardQueries(ledger.db)
    rows, total = queries.job_table(text="blue_dream")
    assert total == 1 and rows[0]["job_id"] == jobs[0]  # "_" is not a wildcard
    rows, total = queries.job_table(text="%")
    assert total == 1 and rows[0]["job_id"] == jobs[2]  # nor is "%"
    rows, total = queries.job_table(sort="url", descending=True, limit=2, offset=1)
    assert total == 4 and [r["url"].rsplit("/", 1)[1] for r in rows] == ["green", "blue_dream"]
    assert queries.failing_reasons() == {"http_5xx": 1}
    names = [p["name"] for p in queries.product_table(sort="min_price")[0]]
    assert names == ["Blue Dream", "Blue_Dream Haze", "Red 100% Sale"]  # 9.50 < 12 < 100
    found, total = queries.product_table(text="blue_")
    assert total == 1 and found[0]["name"] == "Blue_Dream Haze"
    found, total = queries.product_table(min_price=Decimal("10"), max_price=Decimal("100"))
    assert total is None and {p["name"] for p in found} == {"Blue_Dream Haze", "Red 100% Sale"}
    results = queries.store_results()[store]
    assert results["jobs"] == 4 and results["failing"] == 1
    assert results["reasons"] == {"http_5xx": 1}
    slots = queries.upcoming(T0)
    # two never run, one retried after its failure; the completed one is not scheduled
    assert sum(n for _, n in slots) == len(ledger.read.jobs(state="scheduled")) == 3
    assert slots[0][0] == "2026-03-01T08"  # nothing is due yet at T0
    # 90 s on, the job due at 08:01 is overdue: counted apart, not in the current hour
    assert queries.upcoming(T0 + timedelta(seconds=90)) == [("overdue", 1),
                                                            ("2026-03-01T08", 2)]


def test_pages_sign_in_and_refusals_on_both_backends(ledger: Ledger) -> None:
    _, jobs = seeded(ledger)
    with serving(ledger) as (url, secrets), httpx.Client(base_url=url) as browser:
        assert browser.get("/jobs").status_code == 303  # to the sign-in page
        refused = browser.post("/login", data={"token": secrets["bot"], "next": "/"})
        assert refused.status_code == 401  # a bot token opens no session
        opened = browser.post("/login", data={"token": secrets["operate"],
                                              "next": "https://evil.example/"})
        assert opened.status_code == 303 and opened.headers["location"] == "/"  # no open redirect
        cookie = opened.headers["set-cookie"].lower()
        assert "httponly" in cookie and "samesite=strict" in cookie
        for path in ("/", "/jobs?q=blue&sort=url&desc=1", "/stores", "/products?q=blue",
                     "/products?min_price=10&max_price=abc", f"/jobs/{jobs[0]}",
                     "/workers", "/events", "/events?type=failed&before=3",
                     "/events?stream=zz", "/schedule", "/schedule?slot=7&hours=5"):
            page = browser.get(path)
            assert page.status_code == 200, path
            assert "default-src 'self'" in page.headers["content-security-policy"]
        assert browser.get("/jobs/not-a-job").status_code == 404
        found = browser.get("/search", params={"q": "blue dre"}).text  # last word a prefix
        assert "Blue Dream" in found and "€9.50" in found and "Red 100% Sale" not in found
        wordless = browser.get("/search", params={"q": "%%%"})
        assert wordless.status_code == 422 and "no word to look for" in wordless.text
        failed = browser.get("/events?type=crawljob.failed").text
        assert failed.count('data-type="CrawlJob.Failed"') == 1
        assert failed.count('class="event"') == 1
        assert f'href="/jobs/{jobs[3]}"' in failed  # the event names its job
        assert "https://shop.example/p/green" in failed
        # the overview's hour: one result and one failure (read from the latest events)
        assert re.search(r'<td>1</td><td><span class="tag">http_5xx 1</span>',
                         browser.get("/").text)
        csrf = re.search(r'data-csrf="([^"]+)"', browser.get("/jobs").text)
        assert csrf is not None
        forged = browser.post("/jobs/actions", data={"action": "pause", "ids": jobs[1]})
        assert forged.status_code == 403
        asked = browser.post("/jobs/actions", data={"csrf": csrf[1], "action": "pause",
                                                    "ids": [jobs[1], "not-a-job"]})
        assert asked.status_code == 200 and 'id="confirm-yes"' in asked.text
        assert ledger.app.get_job(jobs[1]).state == "scheduled"  # asked, not done
        unchosen = browser.post("/jobs/actions", data={"csrf": csrf[1], "ids": jobs[1],
                                                       "confirmed": "1"})
        assert unchosen.status_code == 422 and "choose an action" in unchosen.text
        done = browser.post("/jobs/actions", data={"csrf": csrf[1], "action": "pause",
                                                   "ids": [jobs[1], "not-a-job"],
                                                   "confirmed": "1", "state": "scheduled"})
        assert done.status_code == 303 and done.headers["location"] == "/jobs?state=scheduled"
        assert ledger.app.get_job(jobs[1]).state == "paused"
        shown = browser.get(done.headers["location"]).text  # the outcome, shown once
        assert "pause: done" in shown and "refused" in shown
        assert "pause: done" not in browser.get("/jobs?state=scheduled").text
        # the API accepts the cookie for reads, and for a change only with the CSRF header
        assert browser.get("/api/v1/jobs").status_code == 200
        assert browser.post(f"/api/v1/jobs/{jobs[1]}/resume").status_code == 403
        assert browser.post(f"/api/v1/jobs/{jobs[1]}/resume",
                            headers={"X-CSRF-Token": csrf[1]}).status_code == 200
        proxy = str(ledger.app.add_proxy("http://user:hunter2@proxy.example:3128", "eu", T0))
        ledger.catch_up()  # the runner's projector step (the dashboard only reads)
        listed = browser.get("/proxies").text
        assert "proxy.example:3128" in listed and "hunter2" not in listed
        unexplained = browser.post(f"/proxies/{proxy}/disable", data={"csrf": csrf[1]})
        assert unexplained.status_code == 422 and ledger.app.get_proxy(proxy).enabled
        off = browser.post(f"/proxies/{proxy}/disable", data={"csrf": csrf[1],
                                                             "reason": "moved"})
        assert off.status_code == 303 and off.headers["location"] == "/proxies"
        shown = browser.get("/proxies").text
        assert "disable: done" in shown and "disabled</span> moved" in shown
        assert not ledger.app.get_proxy(proxy).enabled
        (disabled,) = [e for e in ledger.source.read(0, 100_000)
                       if e.event_type == "Proxy.Disabled" and e.stream_id == proxy]
        assert (disabled.payload["actor"], disabled.payload["surface"]) == (
            "token:operate (operate)", "dashboard")
        assert "No alert subscription yet" in browser.get("/alerts").text
        ledger.app.create_subscription(
            name="hoodie back", target_kind="search", target="hoodie",
            triggers=[{"kind": "back_in_stock"}, {"kind": "price_below", "value": "20"}],
            channel_kind="webhook", channel="https://hooks.example/…", now=T0)
        ledger.catch_up()
        alerts = browser.get("/alerts").text
        assert "hoodie back" in alerts and "search: hoodie" in alerts
        assert "back in stock" in alerts and "price below 20" in alerts
        assert "webhook · https://hooks.example/" in alerts
        browser.post("/logout", data={"csrf": csrf[1]})
        assert browser.get("/jobs").status_code == 303  # signed out
