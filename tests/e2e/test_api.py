"""The operations HTTP API over real HTTP on loopback, on both backends: scoped
tokens (401/403/200), commands through the same application (a Paused event),
RFC 9457 problems (404/409/422), the live event stream, metrics, and `serve` as an
operator starts it."""

from __future__ import annotations

import json
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import backends
import httpx
import pytest
from api_server import api_server, bearer, bot_pages
from pg_server import private_postgres

from api.app import create_app
from api.auth import TokenStore
from domain.values import CrawlFailure, CrawlSuccess, Observation, Offer
from ledger.bootstrap import Ledger
from runtime.clock import SystemClock
from runtime.defaults import DEFAULTS
from runtime.projector import Projector

T0 = datetime(2026, 3, 1, 8, 0, tzinfo=UTC)


@contextmanager
def serving(ledger: Ledger, **options: Any) -> Iterator[tuple[str, dict[str, str]]]:
    """`create_app(ledger, …, **options)` on a free loopback port, and a token of each scope."""
    tokens = TokenStore(ledger.tables.tokens)
    secrets = {scope: tokens.create(scope, scope, T0)[0]
               for scope in ("read", "operate", "admin", "bot")}
    with bot_pages(ledger, options.get("lease_ttl", DEFAULTS.lease_ttl)) as pages, api_server(
            create_app(ledger, tokens, SystemClock(), **{"bot_pages": pages, **options})) as url:
        yield url, secrets



@pytest.fixture
def api(ledger: Ledger) -> Iterator[tuple[str, dict[str, str], str, Ledger]]:
    store = ledger.app.register_store(name="Shop", base_url="https://shop.example",
                                      platform="shopify", now=T0)
    job = ledger.app.schedule_job(kind="catalog", url="https://shop.example/products.json",
                                  now=T0, store_id=store, every=3600)
    with serving(ledger) as (url, secrets):
        yield url, secrets, str(job), ledger


def test_tokens_decide_who_may_read_and_who_may_operate(api: tuple) -> None:  # type: ignore[type-arg]
    url, secrets, job, ledger = api
    with httpx.Client(base_url=url) as http:
        refused = http.get("/api/v1/jobs")
        assert refused.status_code == 401
        assert refused.headers["content-type"] == "application/problem+json"
        assert http.get("/api/v1/jobs", headers=bearer("cl_forged")).status_code == 401
        listed = http.get("/api/v1/jobs", headers=bearer(secrets["read"]))
        assert listed.status_code == 200 and [j["job_id"] for j in listed.json()["items"]] == [job]
        assert http.get("/api/v1/jobs", headers=bearer(secrets["bot"])).status_code == 403
        assert http.post(f"/api/v1/jobs/{job}/pause",
                         headers=bearer(secrets["read"])).status_code == 403
        paused = http.post(f"/api/v1/jobs/{job}/pause", headers=bearer(secrets["operate"]))
        assert paused.status_code == 200 and paused.json()["state"] == "paused"
    events = [e.event_type for e in ledger.source.read(0, 1000)]
    assert events[-1] == "CrawlJob.Paused" and events.count("CrawlJob.Paused") == 1


def test_refusals_are_problems_never_500(api: tuple) -> None:  # type: ignore[type-arg]
    url, secrets, job, _ = api
    op = bearer(secrets["operate"])
    with httpx.Client(base_url=url, headers=op) as http:
        unknown = http.get("/api/v1/jobs/00000000-0000-0000-0000-000000000000")
        assert unknown.status_code == 404 and "unknown job" in unknown.json()["detail"]
        assert http.get("/api/v1/jobs/not-an-id").status_code == 404
        refused = http.post(f"/api/v1/jobs/{job}/resume")
        assert refused.status_code == 409 and "cannot resume" in refused.json()["detail"]
        assert refused.headers["content-type"] == "application/problem+json"
        for body in ({"kind": "nope", "url": "https://x.example/"},
                     {"kind": "catalog", "url": "ftp://x.example/"},
                     {"kind": "catalog", "url": "https://x.example/", "every_seconds": 1}):
            bad = http.post("/api/v1/jobs", json=body)
            assert bad.status_code == 422, (body, bad.text)
            assert bad.json()["status"] == 422
        assert http.post("/api/v1/stores", content=b"{not json",
                         headers={"content-type": "application/json"}).status_code == 422
        bulk = http.post("/api/v1/jobs/actions", json={"action": "pause",
                                                        "ids": [job, "nope"]})
        assert [r["ok"] for r in bulk.json()["results"]] == [True, False]


def test_the_event_stream_delivers_new_events(api: tuple) -> None:  # type: ignore[type-arg]
    url, secrets, job, ledger = api
    head = ledger.source.head()
    received: list[dict[str, object]] = []

    def listen() -> None:
        with httpx.stream("GET", f"{url}/api/v1/events/stream", params={"after": head},
                          headers=bearer(secrets["read"]), timeout=30) as response:
            for line in response.iter_lines():
                if line.startswith("data: "):
                    received.append(json.loads(line[6:]))
                    return

    listener = threading.Thread(target=listen, daemon=True)
    listener.start()
    httpx.post(f"{url}/api/v1/jobs/{job}/force-run", headers=bearer(secrets["operate"]))
    listener.join(30)
    assert received and received[0]["event_type"] == "CrawlJob.ForceRunRequested"
    assert received[0]["position"] == head + 1


def test_product_pages_follow_the_cursor_and_bound_prices_exactly(api: tuple) -> None:  # type: ignore[type-arg]
    url, secrets, job, ledger = api
    prices = ["9.99", "10.00", "10.01", "19.99", "20.00", "20.0000000001", "35"]
    lease = ledger.app.lease(job, "w1", 300, T0).lease_id
    ledger.app.record_success(job, lease, CrawlSuccess(
        200, "https://shop.example/products.json", "shopify", "shopify/1", "h1",
        observations=tuple(Observation(provider_product_id=f"p{i}", name=f"P{i}",
                                       offers=(Offer("1g", Decimal(price), "USD"),),
                                       availability="in_stock")
                           for i, price in enumerate(prices))), T0)
    ledger.catch_up()  # the runner's projector step (the API only reads the read models)
    with httpx.Client(base_url=url, headers=bearer(secrets["read"])) as http:
        def walk(**params: str) -> list[dict[str, object]]:
            items, cursor = [], None
            while True:
                page = http.get("/api/v1/products", params=dict(
                    params, limit="2", **({"cursor": cursor} if cursor else {}))).json()
                assert len(page["items"]) <= 2
                items += page["items"]
                if (cursor := page["next_cursor"]) is None:
                    return items
        everything = walk()
        assert [p["product_id"] for p in everything] == sorted(
            p["product_id"] for p in ledger.read.products())
        bounded = walk(min_price="10.00", max_price="20.00")
        assert sorted(p["min_price"] for p in bounded) == ["10.00", "10.01", "19.99", "20.00"]


def test_metrics_and_health(ledger: Ledger) -> None:
    """Health and metrics read: they report the read models' lag and leave it to the
    projector (stopped here, so the lag stays until it runs a pass)."""
    store = ledger.app.register_store(name="Shop", base_url="https://shop.example",
                                      platform="shopify", now=T0)
    job = ledger.app.schedule_job(kind="catalog", url="https://shop.example/products.json",
                                  now=T0, store_id=store, every=3600)
    ledger.catch_up()
    projector = Projector(ledger)  # never started: nothing projects while the server runs
    with serving(ledger, projector=projector) as (url, _):
        lease = ledger.app.lease(job, "w1", 300, T0).lease_id
        ledger.app.record_failure(job, lease, CrawlFailure("http_5xx", "502", retryable=True),
                                  T0)
        assert httpx.get(f"{url}/healthz").json() == {"status": "ok"}
        head, projected = ledger.source.head(), ledger.projection_position()
        ready = httpx.get(f"{url}/readyz").json()
        assert ready["status"] == "ready" and ready["head"] == head
        # the lease and the failure, recorded behind the read models' back
        assert ready["projection_lag"] == head - projected > 0
        text = httpx.get(f"{url}/metrics").text
        assert f"crawl_ledger_projection_lag_events {head - projected:.1f}" in text
        assert "crawl_ledger_relay_lag_events " not in text  # no relay configured
        assert 'crawl_ledger_jobs{state="scheduled"} 1.0' in text
        assert "crawl_ledger_jobs_failing{" not in text  # the failure is not projected yet
        assert (ledger.source.head(), ledger.projection_position()) == (head, projected)
        projector.run_pass()  # the projector's step: now the read models have the failure
        text = httpx.get(f"{url}/metrics").text
        assert "crawl_ledger_projection_lag_events 0.0" in text
        assert 'crawl_ledger_jobs_failing{reason="http_5xx"} 1.0' in text
        assert "crawl_ledger_api_request_seconds_bucket" in text
        schema = httpx.get(f"{url}/openapi.json").json()
        assert "/api/v1/jobs/{job_id}/{action}" in schema["paths"]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_serve_as_an_operator_runs_it(tmp_path: Path, crawl_ledger_bin: str,
                                      cli_env: Callable[..., dict[str, str]]) -> None:
    env = cli_env(tmp_path / "data")
    refused = subprocess.run([crawl_ledger_bin, "serve", "--host", "0.0.0.0"], env=env,
                             capture_output=True, text=True, timeout=60, check=False)
    assert refused.returncode == 2 and "no API token" in refused.stderr
    created = subprocess.run([crawl_ledger_bin, "tokens", "create", "--scope", "read", "--json"],
                             env=env, capture_output=True, text=True, timeout=60, check=True)
    secret = json.loads(created.stdout)["token"]
    listed = subprocess.run([crawl_ledger_bin, "tokens", "list", "--json"], env=env,
                            capture_output=True, text=True, timeout=60, check=True)
    assert secret not in listed.stdout and json.loads(listed.stdout)[0]["scope"] == "read"
    port = free_port()
    server = subprocess.Popen([crawl_ledger_bin, "serve", "--port", str(port)], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                answer = httpx.get(f"http://127.0.0.1:{port}/api/v1/stores",
                                   headers=bearer(secret))
                break
            except httpx.ConnectError:
                assert server.poll() is None and time.monotonic() < deadline
                time.sleep(0.1)
        assert answer.status_code == 200 and answer.json() == []
    finally:
        server.terminate()
        server.communicate(timeout=30)


def test_hostile_query_values_are_422_not_500(api: tuple) -> None:  # type: ignore[type-arg]
    url, secrets, _, _ = api
    with httpx.Client(base_url=url, headers=bearer(secrets["read"])) as http:
        for path in ("/api/v1/events?after=1784550952979999194567671808",
                     "/api/v1/products?min_price=NaN", "/api/v1/products?max_price=1e400",
                     "/api/v1/jobs?limit=0", "/api/v1/events?limit=-1"):
            answer = http.get(path)
            assert answer.status_code == 422, (path, answer.text)
            assert answer.headers["content-type"] == "application/problem+json"


def test_as_of_shows_a_product_and_a_job_as_the_ledger_knew_them(api: tuple) -> None:  # type: ignore[type-arg]
    url, secrets, job, ledger = api

    def crawl(price: str, at: datetime) -> None:
        lease = ledger.app.lease(job, "w1", 300, at).lease_id
        ledger.app.record_success(job, lease, CrawlSuccess(
            200, "https://shop.example/products.json", "shopify", "shopify/1", f"h{price}",
            observations=(Observation(provider_product_id="p1", name="Lamp",
                                      offers=(Offer("default", Decimal(price), "USD"),),
                                      availability="in_stock"),)), at)
        ledger.app.force_run(job, at)

    crawl("20.00", T0)
    crawl("17.50", T0 + timedelta(hours=2))
    ledger.catch_up()  # the runner's projector step: the product list reads the read model
    between = T0 + timedelta(hours=1)
    with httpx.Client(base_url=url, headers=bearer(secrets["read"])) as http:
        (product,) = http.get("/api/v1/products").json()["items"]
        then = http.get(f"/api/v1/products/{product['product_id']}",
                        params={"as_of": between.isoformat()}).json()
        assert [o["price"] for o in then["state"]["offers"]] == ["20.00"]
        assert [e["event_type"] for e in then["events"]] == ["Product.Discovered",
                                                              "Product.Observed"]
        now = http.get(f"/api/v1/products/{product['product_id']}",
                       params={"as_of": datetime.now(UTC).isoformat()}).json()
        assert [o["price"] for o in now["state"]["offers"]] == ["17.50"]
        assert "Product.PriceChanged" in [e["event_type"] for e in now["events"]]
        job_then = http.get(f"/api/v1/jobs/{job}", params={"as_of": between.isoformat()}).json()
        job_now = http.get(f"/api/v1/jobs/{job}").json()
        assert job_then["state"]["state"] == "scheduled"
        assert len(job_then["events"]) == job_then["version"] < len(job_now["events"])
        before = http.get(f"/api/v1/jobs/{job}", params={"as_of": "2000-01-01T00:00:00Z"})
        assert before.status_code == 404 and "not yet recorded" in before.json()["detail"]
        naive = http.get(f"/api/v1/jobs/{job}", params={"as_of": "2026-01-01T00:00:00"})
        assert naive.status_code == 422


@pytest.mark.postgres
def test_commands_after_a_postgres_restart_succeed(tmp_path: Path) -> None:
    """PostgreSQL (a private server) restarts under the API: the commands that follow
    meet the cut connections and still succeed (the library's recorder tries again on a
    new connection; the read-model database reconnects), without a restart of the API."""
    with private_postgres() as pg, \
            backends.open_ledger(f"{pg.url}?schema=api", tmp_path) as ledger:
        store = ledger.app.register_store(name="Shop", base_url="https://shop.example",
                                          platform="shopify", now=T0)
        job = ledger.app.schedule_job(kind="catalog", url="https://shop.example/products.json",
                                      now=T0, store_id=store, every=3600)
        with serving(ledger) as (url, secrets), httpx.Client(base_url=url, timeout=30) as http:
            operate = bearer(secrets["operate"])
            assert http.post(f"/api/v1/jobs/{job}/pause", headers=operate).status_code == 200
            pg.ctl("-m", "fast", "restart")  # every connection of the API is cut
            answers = [http.post(f"/api/v1/jobs/{job}/{action}", headers=operate)
                       for action in ("resume", "pause", "resume")]
            assert [a.status_code for a in answers] == [200, 200, 200]
            assert [a.json()["state"] for a in answers] == ["scheduled", "paused", "scheduled"]
            listed = http.get("/api/v1/jobs", headers=bearer(secrets["read"]))
            assert listed.status_code == 200
