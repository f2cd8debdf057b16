"""Reads only read (issue 44, item 4): the API, dashboard and /metrics project
nothing and report the read models' lag; reads run side by side; a client reads
its own writes. Real HTTP on loopback, both backends."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
from api_server import bearer
from test_api import T0, serving
from test_dashboard_alerts import csrf

from api.consistency import LAG_HEADER
from domain.values import CrawlFailure
from ledger.bootstrap import Ledger
from projections.queries import ReadModel
from runtime.projector import Projector


def _positions(ledger: Ledger) -> tuple[int, int]:
    return ledger.source.head(), ledger.projection_position()


def test_a_read_records_and_projects_nothing_and_reports_the_lag(ledger: Ledger) -> None:
    store = ledger.app.register_store(name="Shop", base_url="https://shop.example",
                                      platform="shopify", now=T0)
    job = ledger.app.schedule_job(kind="catalog", url="https://shop.example/products.json",
                                  now=T0, store_id=store, every=3600)
    ledger.catch_up()
    with serving(ledger, projector=Projector(ledger)) as (url, secrets):  # never started
        lease = ledger.app.lease(job, "w1", 300, T0).lease_id
        ledger.app.record_failure(job, lease, CrawlFailure("http_5xx", "502", True), T0)
        before = _positions(ledger)
        behind = before[0] - before[1]
        assert behind > 0
        with httpx.Client(base_url=url, headers=bearer(secrets["read"])) as http:
            for path in ("/api/v1/stores", "/api/v1/jobs", "/api/v1/products",
                         f"/api/v1/jobs/{job}", "/api/v1/workers"):
                answer = http.get(path)
                assert answer.status_code == 200, path
                assert answer.headers[LAG_HEADER] == str(behind), path
            # the read model still has the job as scheduled: nothing caught it up
            assert http.get(f"/api/v1/jobs/{job}").json()["status"]["state"] == "scheduled"
            assert http.get("/readyz").json()["projection_lag"] == behind
            assert f"crawl_ledger_projection_lag_events {behind:.1f}" in http.get("/metrics").text
        with httpx.Client(base_url=url) as browser:
            browser.post("/login", data={"token": secrets["read"], "next": "/"})
            overview = browser.get("/")
            assert overview.status_code == 200
            assert f"<dt>projection lag</dt><dd>{behind} events</dd>" in overview.text
            for page in ("/jobs", "/products", "/stores", f"/jobs/{job}", "/workers", "/alerts",
                         "/changes", "/search?q=x", "/schedule", "/proxies", "/events"):
                assert browser.get(page).status_code == 200, page
        assert _positions(ledger) == before


class _MeetingReads(ReadModel):
    """The stores read model, whose `stores()` returns only once two readers are in it
    at the same time (a barrier: two reads that ran one after the other never meet)."""

    def __init__(self, read: ReadModel, meeting: threading.Barrier) -> None:
        super().__init__(read.db)
        self.meeting = meeting

    def stores(self) -> list[dict[str, Any]]:
        self.meeting.wait()  # BrokenBarrierError (a 500) if the other read cannot get in
        return super().stores()


def test_two_reads_run_at_the_same_time(ledger: Ledger) -> None:
    ledger.app.register_store(name="Shop", base_url="https://shop.example",
                              platform="shopify", now=T0)
    meeting = threading.Barrier(2, timeout=20)
    with serving(ledger) as (url, secrets):
        ledger.read = _MeetingReads(ledger.read, meeting)
        with ThreadPoolExecutor(2) as pool:
            answers = list(pool.map(lambda _: httpx.get(
                f"{url}/api/v1/stores", headers=bearer(secrets["read"]), timeout=30), range(2)))
    assert [a.status_code for a in answers] == [200, 200]
    assert [len(a.json()) for a in answers] == [1, 1]
    assert not meeting.broken


def test_a_client_reads_its_own_writes(ledger: Ledger) -> None:
    projector = Projector(ledger, every=3600)  # it runs a pass only when a write wakes it
    projector.start()
    try:
        with serving(ledger, projector=projector) as (url, secrets), \
                httpx.Client(base_url=url, headers=bearer(secrets["operate"])) as http:
            made = http.post("/api/v1/stores", json={
                "name": "Shop", "base_url": "https://shop.example", "platform": "shopify"})
            store = made.json()["id"]
            listed = http.get("/api/v1/stores")
            assert [s["store_id"] for s in listed.json()] == [store]
            assert listed.headers[LAG_HEADER] == "0"
            job = http.post("/api/v1/jobs", json={
                "kind": "catalog", "url": "https://shop.example/products.json",
                "store_id": store}).json()["id"]
            assert [j["job_id"] for j in http.get("/api/v1/jobs").json()["items"]] == [job]
            assert http.post(f"/api/v1/jobs/{job}/pause").status_code == 200
            assert http.get(f"/api/v1/jobs/{job}").json()["status"]["state"] == "paused"
            assert http.get("/api/v1/jobs", params={"state": "paused"}).json()["items"]
    finally:
        projector.stop()


class _HeldProjector(Projector):
    """A projector whose read-your-writes wait holds until the test lets it go: a write
    waiting for the read models, for as long as the test needs it to."""

    def __init__(self, ledger: Ledger) -> None:
        super().__init__(ledger)
        self.waiting, self.release = threading.Event(), threading.Event()

    def wait_past(self, position: int, timeout: float) -> bool:
        self.waiting.set()
        self.release.wait(30)
        return super().wait_past(position, 0)


def test_a_dashboard_write_waiting_for_the_read_models_blocks_no_other_request(
        ledger: Ledger) -> None:
    store = ledger.app.register_store(name="Shop", base_url="https://shop.example",
                                      platform="shopify", now=T0)
    job = ledger.app.schedule_job(kind="catalog", url="https://shop.example/products.json",
                                  now=T0, store_id=store, every=3600)
    ledger.catch_up()
    projector = _HeldProjector(ledger)
    with serving(ledger, projector=projector) as (url, secrets), \
            httpx.Client(base_url=url, timeout=30) as browser, ThreadPoolExecutor(1) as pool:
        browser.post("/login", data={"token": secrets["operate"], "next": "/"})
        secret = csrf(browser.get(f"/jobs/{job}").text)
        pausing = pool.submit(browser.post, f"/jobs/{job}/action",
                              data={"action": "pause", "reason": "held", "csrf": secret})
        assert projector.waiting.wait(30), "the pause never reached its read-your-writes wait"
        try:  # the pause is recorded and waits: the server still answers everyone else
            assert not pausing.done()
            assert httpx.get(f"{url}/healthz", timeout=5).status_code == 200
            assert httpx.get(f"{url}/api/v1/stores", headers=bearer(secrets["read"]),
                             timeout=5).status_code == 200
        finally:
            projector.release.set()
        assert pausing.result(30).status_code == 303
    assert ledger.app.get_job(job).state == "paused"
