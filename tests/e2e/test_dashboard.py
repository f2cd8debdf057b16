"""The dashboard in a real browser: Playwright drives Debian's Chromium (launched by
its executable path) against `serve`'s pages over the demo's data.

Flows: sign in; filter jobs; bulk-pause three jobs (after a confirmation) and find
`Paused` in each timeline; pause one job from its page (only the actions its state
accepts are enabled) and find who did it on the timeline; a bulk cancel asks first and
"No" changes nothing; hover a point of a product's chart (old → new, the job and raw
page behind it, the range picker); add an alert subscription, test it against a
loopback webhook and remove it (after a confirmation), each showing who did it; a new event appears on a job page
without a reload; a read-scope user sees no action and is refused if it posts one;
every page is usable at 1280 px and 390 px, logs no console error or CSP violation
and loads nothing from outside the server. Each page is screenshotted: into `LEDGER_SCREENSHOTS` when it is set (`make
screenshots` sets it to docs/screenshots/, the README's images), else into a temporary
directory, so a test run leaves the checkout as it was.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from backends import LOOPBACK_ENV
from test_alerts_api import loopback_sender
from test_api import serving
from webhook_receiver import Receiver, receiver

from ledger.bootstrap import Ledger
from ledger.drivers.demo import DemoConfig, run_embedded_demo
from ledger.settings import Settings

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"

if not Path(CHROMIUM).exists():
    if os.environ.get("CI"):
        raise RuntimeError("chromium is missing: `make setup-test` installs it (apt chromium)")
    pytest.skip("Debian's chromium is not installed (make setup-test installs it)",
                allow_module_level=True)

sync_api = pytest.importorskip("playwright.sync_api")


@pytest.fixture(scope="module", autouse=True)
def shots(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    asked = os.environ.get("LEDGER_SCREENSHOTS")
    directory = Path(asked) if asked else tmp_path_factory.mktemp("screenshots")
    directory.mkdir(parents=True, exist_ok=True)
    Visit.shots = directory
    yield directory


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Ledger]:
    data = tmp_path_factory.mktemp("dashboard")
    config = DemoConfig(stores=3, cycles=3, seed=7, fault_rate=0.1)
    settings = Settings.from_env({**LOOPBACK_ENV, "LEDGER_DATA_DIR": str(data),
                                  "LEDGER_DEFAULT_CRAWL_DELAY": str(config.crawl_delay)})
    ledger = run_embedded_demo(settings, config)
    ledger.catch_up()
    try:
        yield ledger
    finally:
        ledger.close()


@pytest.fixture(scope="module")
def hook() -> Iterator[Receiver]:
    """A webhook receiver on loopback: the alert channel the dashboard's test sends to."""
    with receiver() as found:
        yield found


@pytest.fixture(scope="module")
def site(demo: Ledger, hook: Receiver) -> Iterator[tuple[str, dict[str, str]]]:
    with serving(demo, alert_sender=loopback_sender) as served:
        yield served


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with sync_api.sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM)
        try:
            yield launched
        finally:
            launched.close()


class Visit:
    """A browser context signed in (or not) that records every request it makes."""

    #: where `shot` writes (the `shots` fixture: `LEDGER_SCREENSHOTS` or a temporary dir)
    shots: Path

    def __init__(self, browser: Any, base: str, width: int = 1280) -> None:
        self.base = base
        self.context = browser.new_context(base_url=base, viewport={"width": width,
                                                                    "height": 900})
        self.page = self.context.new_page()
        self.requested: list[str] = []
        self.page.on("request", lambda request: self.requested.append(request.url))
        #: console errors (Chromium reports a Content-Security-Policy refusal there too)
        self.errors: list[str] = []
        self.page.on("console", lambda message: self.errors.append(message.text)
                     if message.type == "error" else None)
        self.page.on("response", lambda answer: self.errors.append(
            f"HTTP {answer.status} {answer.url}") if answer.status >= 400 else None)
        self.context.add_init_script(
            "document.addEventListener('securitypolicyviolation', (e) => "
            "console.error(`CSP violation: ${e.violatedDirective} ${e.blockedURI}`));")

    def sign_in(self, secret: str) -> None:
        self.page.goto("/jobs")
        assert self.page.url.startswith(f"{self.base}/login")  # sent to sign in first
        self.page.fill("#token", secret)
        self.page.click("button[type=submit]")
        self.page.wait_for_url(f"{self.base}/jobs")

    def shot(self, name: str) -> None:
        self.page.screenshot(path=str(self.shots / f"{name}.png"), full_page=True)

    def outside(self) -> list[str]:
        return [url for url in self.requested
                if not url.startswith(self.base) and not url.startswith("data:")]

    def close(self) -> None:
        self.context.close()


def test_sign_in_filter_and_bulk_pause(site: tuple[str, dict[str, str]], browser: Any,
                                       demo: Ledger) -> None:
    url, secrets = site
    visit = Visit(browser, url)
    try:
        visit.page.goto("/login")
        visit.shot("login")
        visit.sign_in(secrets["operate"])
        cookie = next(c for c in visit.context.cookies() if c["name"] == "crawl_ledger_session")
        assert cookie["httpOnly"] and cookie["sameSite"] == "Strict"

        page = visit.page
        page.select_option("select[name=state]", "scheduled")
        page.click(".filters button[type=submit]")
        page.wait_for_url(re.compile(r".*state=scheduled.*"))
        states = page.locator("table.jobs tbody .state").all_inner_texts()
        assert len(states) >= 3 and set(states) == {"scheduled"}
        visit.shot("jobs")

        chosen = page.locator("table.jobs tbody tr").evaluate_all(
            "rows => rows.slice(0, 3).map(r => r.dataset.job)")
        for job_id in chosen:
            page.check(f"input[name=ids][value='{job_id}']")
        page.select_option("#bulk-action", "pause")
        page.click(".bulkbar button[type=submit]")
        page.click("#confirm-yes")  # a bulk action asks first
        page.wait_for_selector(".outcomes")
        assert re.search(r"/jobs\?.*state=scheduled", page.url)  # redirected after the POST
        assert page.locator(".outcomes li").count() == 3
        assert "pause: done" in page.inner_text(".outcomes")
        for job_id in chosen:
            page.goto(f"/jobs/{job_id}")
            assert page.locator("#timeline li[data-type='CrawlJob.Paused']").count() == 1
            assert page.inner_text("#job-state") == "paused"
        visit.shot("job")
        assert {str(r["job_id"]) for r in demo.read.jobs(state="paused")} >= set(chosen)
        assert visit.outside() == []
    finally:
        visit.close()


def test_a_new_event_appears_on_the_job_page_without_reload(
        site: tuple[str, dict[str, str]], browser: Any, demo: Ledger) -> None:
    url, secrets = site
    visit = Visit(browser, url)
    try:
        visit.sign_in(secrets["read"])
        job = str(demo.read.jobs(state="scheduled")[0]["job_id"])
        visit.page.goto(f"/jobs/{job}")
        visit.page.wait_for_function("document.getElementById('live').textContent === 'live'")
        before = visit.page.locator("#timeline li").count()
        demo.app.pause(job, datetime.now(UTC))  # an operator elsewhere (the CLI, the API)
        visit.page.wait_for_selector("#timeline li.fresh[data-type='CrawlJob.Paused']",
                                     timeout=15_000)
        assert visit.page.locator("#timeline li").count() == before + 1
        assert visit.page.inner_text("#job-state") == "paused"  # the state follows, too
        demo.app.resume(job, datetime.now(UTC))
        visit.page.wait_for_selector("#timeline li.fresh[data-type='CrawlJob.Resumed']",
                                     timeout=15_000)
        assert visit.page.inner_text("#job-state") == "scheduled"
    finally:
        visit.close()


def test_product_chart_hover_shows_the_observation(site: tuple[str, dict[str, str]],
                                                   browser: Any, demo: Ledger) -> None:
    """The chart of the product whose price moved most: a series per option and pricing
    type in a colour of its own, hover shows old → new with links to the job and the raw
    page behind the point, the range picker narrows it on the server, and the keyboard
    reaches every point."""
    url, secrets = site
    visit = Visit(browser, url)
    try:
        visit.sign_in(secrets["read"])
        changed = max(demo.read.products(), key=lambda p: (p["price_changes"] or 0,
                                                           p["observations"] or 0))
        assert changed["price_changes"] > 0
        page = visit.page
        page.goto("/products?q=" + changed["name"].split()[0])
        page.click(f"a[href='/products/{changed['product_id']}']")
        points = page.locator("circle.point")
        assert points.count() >= changed["observations"] >= 2
        places = set(points.evaluate_all("ps => ps.map(p => `${p.getAttribute('cx')},"
                                         "${p.getAttribute('cy')}`)"))
        assert len(places) >= 2  # distinguishable points
        series = page.locator("#chart g.series")
        colours = series.evaluate_all("gs => gs.map(g => getComputedStyle("
                                      "g.querySelector('path.price')).stroke)")
        assert len(set(colours)) == len(colours) == page.locator(".legend .key[data-series]"
                                                                 ).count()
        moved = page.locator("circle.point:not([data-old=''])").first
        old, new = moved.get_attribute("data-old"), moved.get_attribute("data-price")
        moved.hover()
        tip = page.locator("#tip")
        tip.wait_for(state="visible")
        assert f"{old} → {new}" in tip.locator(".tip-change").inner_text()  # old → new
        assert tip.locator("a.tip-job").get_attribute("href").startswith("/jobs/")
        raw = page.request.get(tip.locator("a.tip-raw").get_attribute("href"))
        assert raw.status == 200 and raw.headers["content-type"].startswith("text/plain")
        assert "sandbox" in raw.headers["content-security-policy"] and raw.body()
        visit.shot("product")
        page.click(".ranges a[href$='range=7d']")  # the range picker: a server-side query
        page.wait_for_url(re.compile(r".*range=7d$"))
        assert page.get_attribute(".ranges a[aria-current=page]", "href").endswith("range=7d")
        labels = page.locator("#chart text.xtick").evaluate_all(
            "ts => ts.map(t => t.textContent)")
        assert labels and len(labels) == len(set(labels))  # no date label repeats
        page.goto(f"/products/{changed['product_id']}")
        for _ in range(100):  # keyboard only: Tab reaches the chart's points, shows the first
            page.keyboard.press("Tab")
            if page.evaluate("document.activeElement.tagName") == "circle":
                break
        assert page.evaluate("document.activeElement.tagName") == "circle"
        tip.wait_for(state="visible")
        assert points.first.get_attribute("data-price") in tip.inner_text()
        page.goto("/products")
        visit.shot("products")
        assert visit.outside() == [] and visit.errors == []
    finally:
        visit.close()


def test_a_read_scope_user_cannot_act(site: tuple[str, dict[str, str]], browser: Any,
                                      demo: Ledger) -> None:
    url, secrets = site
    visit = Visit(browser, url)
    try:
        visit.sign_in(secrets["read"])
        page = visit.page
        assert page.locator(".bulkbar").count() == 0
        assert page.locator("input[name=ids]").count() == 0
        job = str(demo.read.jobs(state="scheduled")[0]["job_id"])
        page.goto(f"/jobs/{job}")
        assert page.locator(".actions button").count() == 0
        page.goto("/stores")
        assert page.locator(".storeforms").count() == 0
        csrf = page.get_attribute("main", "data-csrf")
        posted = page.request.post("/jobs/actions", form={"csrf": csrf, "action": "pause",
                                                          "ids": job})
        assert posted.status == 403
        api = page.request.post(f"/api/v1/jobs/{job}/pause", headers={"X-CSRF-Token": csrf})
        assert api.status == 403
        assert demo.app.get_job(job).state == "scheduled"
        # a form without the session's CSRF secret is refused even for an operator
        operator = Visit(browser, url)
        operator.sign_in(secrets["operate"])
        forged = operator.page.request.post("/jobs/actions", form={"action": "pause",
                                                                   "ids": job})
        assert forged.status == 403
        operator.close()
        assert demo.app.get_job(job).state == "scheduled"
    finally:
        visit.close()


@pytest.mark.parametrize("width", [1280, 390])
def test_every_page_at_desktop_and_phone_width(site: tuple[str, dict[str, str]], browser: Any,
                                               demo: Ledger, width: int) -> None:
    url, secrets = site
    visit = Visit(browser, url, width)
    try:
        visit.sign_in(secrets["operate"])
        job = str(demo.read.jobs()[0]["job_id"])
        product = str(demo.read.products()[0]["product_id"])
        for name, path in [("overview", "/"), ("jobs", "/jobs"), ("job", f"/jobs/{job}"),
                           ("stores", "/stores"), ("products", "/products"),
                           ("product", f"/products/{product}"), ("workers", "/workers"),
                           ("schedule", "/schedule"), ("proxies", "/proxies"),
                           ("alerts", "/alerts"), ("changes", "/changes?period=7d"),
                           ("events", "/events"),
                           ("search", "/search?q=" + demo.read.products()[0]["name"])]:
            answer = visit.page.goto(path)
            assert answer is not None and answer.status == 200, path
            assert visit.page.locator("h1").count() == 1, path
            # nothing wider than the window: wide tables scroll inside their box
            overflow = visit.page.evaluate(
                "document.documentElement.scrollWidth - window.innerWidth")
            assert overflow <= 1, f"{path} is {overflow}px wider than {width}px"
            times = visit.page.locator("time[datetime]")
            if times.count():  # shown in the browser's time zone, not as raw ISO text
                assert "T" not in times.first.inner_text(), path
            assert visit.page.locator("h1").first.is_visible(), path
            if name == "product":  # the chart's tip box stays hidden until a point is hovered
                assert visit.page.locator("#tip").count() in (0, 1)
                assert not visit.page.locator("#tip").is_visible()
            if name == "jobs" and width == 390:  # the URL column is readable on a phone
                cell = visit.page.locator("table.jobs tbody td.url").first.bounding_box()
                assert cell is not None and cell["width"] >= 100, cell
            if name == "schedule":  # every recurring job's next run is in a column
                runs = visit.page.locator("#slots rect.slotbar").evaluate_all(
                    "bars => bars.reduce((n, b) => n + Number(b.dataset.runs), 0)")
                assert runs >= len([j for j in demo.read.jobs(state="scheduled")
                                    if j["interval_s"]]) > 0
            if name == "overview":  # the bars' widths follow their counts (SVG, not styles)
                widths = visit.page.locator("#upcoming rect").evaluate_all(
                    "bars => bars.map(b => b.getBoundingClientRect().width)")
                assert widths and max(widths) > 50
            if name == "changes":  # the four sections, each with its heading
                assert visit.page.locator("section[id^=changes-] h2").count() == 4
                assert visit.page.locator("#changes-drop h2").is_visible()
            if name == "search":  # the product searched for by its name is found
                assert visit.page.locator(f"#results a[href='/products/{product}']").count()
            if width == 1280:  # every page, into the screenshots folder
                visit.shot(name)
            if width == 390 and name in ("overview", "jobs"):
                visit.shot(f"{name}-phone")
        assert visit.outside() == [] and visit.errors == []
        html = visit.page.content()
        assert not re.search(r"""(src|href)=["']https?://""", html)
    finally:
        visit.close()


def test_interactive_api_docs_come_from_this_server(site: tuple[str, dict[str, str]],
                                                    browser: Any) -> None:
    """/docs renders Swagger UI over /openapi.json with assets from the installed package:
    every operation is listed and nothing is fetched from outside (no console error
    from the Content-Security-Policy either)."""
    url, _ = site
    visit = Visit(browser, url)
    errors: list[str] = []
    visit.page.on("console", lambda message: errors.append(message.text)
                  if message.type == "error" else None)
    try:
        answer = visit.page.goto("/docs")
        assert answer is not None and answer.status == 200
        assert "script-src 'self'" in answer.headers["content-security-policy"]
        visit.page.wait_for_selector(".opblock-summary-path", timeout=20_000)
        paths = set(visit.page.locator(".opblock-summary-path").all_inner_texts())
        documented = set(visit.page.request.get("/openapi.json").json()["paths"])
        assert {p.replace("\u200b", "") for p in paths} == documented
        assert visit.outside() == [] and errors == []
    finally:
        visit.close()


def test_pause_from_the_job_page_names_who_did_it(site: tuple[str, dict[str, str]],
                                                  browser: Any, demo: Ledger) -> None:
    url, secrets = site
    visit = Visit(browser, url)
    try:
        visit.sign_in(secrets["operate"])
        job = str(demo.read.jobs(state="scheduled")[-1]["job_id"])
        page = visit.page
        page.goto(f"/jobs/{job}")
        enabled = page.locator(".actions button:enabled").all_inner_texts()
        assert sorted(enabled) == ["cancel", "force-run", "pause", "retry"]  # not resume
        page.fill(".actions input[name=reason]", "supplier asked us to wait")
        page.click(".actions button[value=pause]")
        page.wait_for_url(f"{url}/jobs/{job}")  # redirected to the page, not left on a POST
        assert "pause: done" in page.inner_text("#flash")
        paused = page.locator("#timeline li[data-type='CrawlJob.Paused']")
        assert paused.count() == 1
        assert "by token:" in paused.inner_text() and "via dashboard" in paused.inner_text()
        assert "supplier asked us to wait" in paused.inner_text()
        assert page.locator(".actions button:enabled").all_inner_texts() == ["resume",
                                                                              "cancel"]
        page.reload()  # the outcome shows once
        assert page.locator("#flash").count() == 0
        visit.shot("job-paused")
        assert visit.errors == []
    finally:
        visit.close()


def test_a_bulk_cancel_asks_before_it_cancels(site: tuple[str, dict[str, str]], browser: Any,
                                              demo: Ledger) -> None:
    url, secrets = site
    visit = Visit(browser, url)
    try:
        visit.sign_in(secrets["operate"])
        page = visit.page
        assert page.input_value("#bulk-action") == ""  # no action preselected
        page.goto("/jobs?state=scheduled")
        chosen = page.locator("table.jobs tbody tr").evaluate_all(
            "rows => rows.slice(0, 2).map(r => r.dataset.job)")
        for job_id in chosen:
            page.check(f"input[name=ids][value='{job_id}']")
        page.select_option("#bulk-action", "cancel")
        page.click(".bulkbar button[type=submit]")
        page.wait_for_selector("#confirm-yes")
        assert page.inner_text("h1") == "Cancel 2 jobs?"
        assert page.locator("#confirm tbody tr").count() == 2
        visit.shot("confirm")
        page.click("#confirm-no")  # "No": back to the list, nothing cancelled
        page.wait_for_url(re.compile(r".*/jobs\?state=scheduled(&sort=next_run_at)?$"))
        assert all(demo.app.get_job(j).state == "scheduled" for j in chosen)
        for job_id in chosen:
            page.check(f"input[name=ids][value='{job_id}']")
        page.select_option("#bulk-action", "cancel")
        page.click(".bulkbar button[type=submit]")
        page.click("#confirm-yes")
        page.wait_for_selector(".outcomes")
        assert page.locator(".outcomes li").count() == 2
        assert all(demo.app.get_job(j).state == "cancelled" for j in chosen)
        assert visit.errors == []
    finally:
        visit.close()


def test_events_filter_on_enter_names_streams_and_pages_back(
        site: tuple[str, dict[str, str]], browser: Any, demo: Ledger) -> None:
    url, secrets = site
    visit = Visit(browser, url)
    try:
        visit.sign_in(secrets["read"])
        page = visit.page
        page.goto("/events")
        assert page.locator("#timeline li").count() == 100
        page.fill("#type-filter", "pricechanged")
        page.press("#type-filter", "Enter")  # submits the filter to the server
        page.wait_for_url(re.compile(r".*/events\?type=pricechanged.*"))
        types = set(page.locator("#timeline li").evaluate_all(
            "items => items.map(i => i.dataset.type)"))
        assert types == {"Product.PriceChanged"}
        first = page.locator("#timeline li").first
        assert "→" in first.locator(".ereason").inner_text()  # old → new, not a job id
        link = first.locator("a.ename")
        product_id = link.get_attribute("href").rsplit("/", 1)[1]
        assert link.inner_text() == demo.read.product(product_id)["name"]
        page.fill("#stream-filter", product_id[:8])
        page.press("#stream-filter", "Enter")
        page.wait_for_url(re.compile(rf".*stream={product_id[:8]}.*"))
        keys = page.locator("#timeline li").evaluate_all("items => items.map(i => i.dataset.key)")
        assert keys and all(k.startswith(product_id) for k in keys)
        page.goto("/events")
        newest = page.locator("#timeline li").first.get_attribute("data-key")
        page.click("#older")  # the page before: older events, none of the first page's
        page.wait_for_url(re.compile(r".*before=\d+"))
        assert page.locator("#timeline li").count() == 100
        assert page.locator(f"#timeline li[data-key='{newest}']").count() == 0
        visit.shot("events-older")
        assert visit.errors == [] and visit.outside() == []
    finally:
        visit.close()


def test_the_overview_counters_follow_the_event_stream(site: tuple[str, dict[str, str]],
                                                        browser: Any, demo: Ledger) -> None:
    url, secrets = site
    visit = Visit(browser, url)
    try:
        visit.sign_in(secrets["read"])
        page = visit.page
        page.goto("/")
        page.wait_for_function("document.getElementById('live').textContent === 'live'")
        assert page.locator("#hourly-chart g[data-hour]").count() >= 1  # results as a chart
        paused = int(page.inner_text(".card[data-state=paused] .n"))
        job = str(demo.read.jobs(state="scheduled")[0]["job_id"])
        demo.app.pause(job, datetime.now(UTC))  # an operator elsewhere
        try:
            sync_api.expect(page.locator(".card[data-state=paused] .n")).to_have_text(
                str(paused + 1), timeout=15_000)  # no reload: the counter follows
            assert page.evaluate("performance.getEntriesByType('navigation').length") == 1
        finally:
            demo.app.resume(job, datetime.now(UTC))
        visit.shot("overview-live")
        assert visit.errors == [] and visit.outside() == []
    finally:
        visit.close()


def test_an_alert_added_tested_and_removed_from_the_dashboard_names_who_did_it(
        site: tuple[str, dict[str, str]], browser: Any, demo: Ledger, hook: Receiver) -> None:
    url, secrets = site
    visit = Visit(browser, url)
    try:
        visit.sign_in(secrets["operate"])
        page = visit.page
        page.goto("/alerts")
        form = page.locator("#new-alert")
        form.locator("input[name=name]").fill("cheaper caps")
        form.locator("select[name=target_kind]").select_option("search")
        form.locator("input[name=target]").fill("cap")
        form.locator("input[name=trigger][value=price_drop]").check()
        form.locator("input[name=value_price_drop]").fill("5")
        form.locator("input[name=trigger][value=back_in_stock]").check()
        form.locator("input[name=url]").fill(hook.url)
        form.locator("input[name=secret]").fill(hook.secret)
        form.locator("input[name=reason]").fill("the buyer asked")
        page.click("#add-alert")
        page.wait_for_url(f"{url}/alerts")  # redirected after the POST
        row = page.locator("#subscriptions tbody tr", has_text="cheaper caps")
        assert row.count() == 1 and "added" in page.inner_text("#flash")
        assert "by token:operate (operate) via dashboard" in row.inner_text()
        assert hook.secret not in page.content()

        row.locator("button.test-alert").click()
        page.wait_for_url(f"{url}/alerts")
        assert "test delivered" in page.inner_text("#flash")
        assert any(r.signature_ok for r in hook.requests)
        assert "by token:operate" in row.locator(".last-test").inner_text()
        visit.shot("alerts-actions")

        row.locator("button.remove-alert").click()  # asks first; "No" changes nothing
        page.wait_for_selector("#confirm-yes")
        page.click("#confirm-no")
        page.wait_for_url(f"{url}/alerts")
        assert row.count() == 1
        row.locator("button.remove-alert").click()
        page.fill("#confirm input[name=reason]", "season over")
        page.click("#confirm-yes")
        page.wait_for_url(f"{url}/alerts")
        assert row.count() == 0
        removed = page.locator("#removed tbody tr", has_text="cheaper caps")
        assert "by token:operate (operate)" in removed.inner_text()
        assert visit.errors == [] and visit.outside() == []
    finally:
        visit.close()
