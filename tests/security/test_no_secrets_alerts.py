"""Issue 43 rows 10-11: a channel's secrets never reach the event log or any surface.

Three subscriptions carry a planted password, query token and path secret (and a
webhook signing key): one whose receiver answers 500, one whose address the
sender refuses at delivery, one (json://) whose port is closed. Every delivery
fails and dies; then every surface a read token or an operator sees is searched
for the planted values: the stored events' raw bytes, an `events export` file,
the API (`/api/v1/events`, `/api/v1/alerts…`, the SSE stream), the dashboard,
`/metrics`, the server's logs and output, and the CLI's alert listings.
"""

from __future__ import annotations

import asyncio
import json
import logging
import socket
import subprocess
import sys
from datetime import datetime, timedelta
from decimal import Decimal
from pathlib import Path
from uuid import UUID

import httpx
import pytest
from alert_harness import T0, bearer, serving, subscription
from backends import settings_for
from webhook_receiver import receiver

from domain.values import CrawlSuccess, Observation, Offer
from ledger.bootstrap import Ledger
from ledger.host.logs import logging_config
from runtime.alert_step import AlertBatch, AlertOptions, AlertStep
from runtime.clock import SimulatedClock
from runtime.db_thread import DbThread
from workers.alert_delivery.notify import Notifier
from workers.fetching.addresses import AddressGuard
from workers.fetching.http import build_client

PASSWORD = "pw-Hunter2-PLANTED"
TOKEN = "tok9f8e7d-PLANTED"
PATH_SECRET = "XyZ123PathSecretPLANTED"
SIGNING_KEY = "signing-key-PLANTED"
PLANTED = (PASSWORD, TOKEN, PATH_SECRET, SIGNING_KEY, "PLANTED")
CLI = str(Path(sys.executable).with_name("crawl-ledger"))


def crawl(ledger: Ledger, job: UUID, at: datetime, availability: str) -> None:
    app = ledger.app
    app.force_run(job, at)
    task = app.lease(job, "w", 300, at)
    seen = Observation(provider_product_id="a", name="a Hoodie", availability=availability,
                       offers=(Offer("M", Decimal("40.00"), "EUR"),))
    app.record_success(job, task.lease_id, CrawlSuccess(
        200, task.url, "test", "test/1", f"h{at}", observations=(seen,)), at)


def closed_port() -> int:
    with socket.create_server(("127.0.0.1", 0)) as server:
        return int(server.getsockname()[1])


def deliver(ledger: Ledger, clock: SimulatedClock) -> AlertBatch:
    """One handler turn whose sender accepts only 127.0.0.1 (127.0.0.3 moved out of reach)."""
    async def go() -> AlertBatch:
        guard = AddressGuard(["127.0.0.1/32"])
        db = DbThread(1)
        try:
            async with build_client(guard=guard) as client:
                step = AlertStep(ledger, Notifier(client, guard), clock, db,
                                 options=AlertOptions(max_attempts=1))
                return await step.run_once()
        finally:
            db.close()
    return asyncio.run(go())


def sse_text(http: httpx.Client, read: dict[str, str], head: int) -> str:
    """The event stream from the start until the message of position `head`."""
    seen = []
    with http.stream("GET", "/api/v1/events/stream", headers=read, timeout=30) as stream:
        for line in stream.iter_lines():
            seen.append(line)
            if line == f"id: {head}":
                break
    return "\n".join(seen)


def dashboard_text(http: httpx.Client, read_token: str) -> str:
    signed_in = http.post("/login", data={"token": read_token, "next": "/"})
    assert signed_in.status_code == 303, signed_in.text
    return "".join(http.get(page).text for page in ("/", "/events", "/events?type=Delivery"))


def cli(tmp_path: Path, url: str, *argv: str) -> str:
    settings = settings_for(url, tmp_path)
    env = {"PATH": "/usr/bin:/bin", "LEDGER_STORE": url,
           "LEDGER_DATA_DIR": str(settings.data_dir),
           "LEDGER_ALLOW_NETWORKS": "127.0.0.0/8,::1/128"}
    done = subprocess.run([CLI, *argv], env=env, capture_output=True, text=True, timeout=120,
                          check=False, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr
    return done.stdout + done.stderr


def test_no_planted_secret_on_any_surface_after_failed_deliveries(
        ledger: Ledger, store_url: str, tmp_path: Path, caplog: pytest.LogCaptureFixture,
        capfd: pytest.CaptureFixture[str]) -> None:
    caplog.set_level(logging.DEBUG)  # the server's logs at DEBUG, with its per-library levels
    for name, level in logging_config({"LEDGER_LOG_LEVEL": "DEBUG"}, "serve")["loggers"].items():
        caplog.set_level(level["level"], logger=name)
    app = ledger.app
    store = app.register_store(name="Shop", base_url="https://shop.example", platform="shopify",
                               now=T0)
    job = app.schedule_job(kind="catalog", url="https://shop.example/all", now=T0,
                           store_id=store, every=3600)
    crawl(ledger, job, T0, "in_stock")
    crawl(ledger, job, T0 + timedelta(minutes=30), "out_of_stock")
    seen: dict[str, str] = {}
    with (receiver(secret=SIGNING_KEY, statuses=[500] * 10) as hook,
          serving(ledger, ["127.0.0.0/8"]) as (base, tokens),
          httpx.Client(base_url=base) as http):
        port = hook.url.rsplit(":", 1)[1].split("/")[0]
        urls = [("webhook", f"http://alice:{PASSWORD}@127.0.0.1:{port}/services/T0001/B0002/"
                            f"{PATH_SECRET}?token={TOKEN}", SIGNING_KEY),
                ("webhook", f"http://alice:{PASSWORD}@127.0.0.3:{port}/hook?token={TOKEN}",
                 SIGNING_KEY),
                ("apprise", f"json://alice:{PASSWORD}@127.0.0.1:{closed_port()}/x/{PATH_SECRET}"
                            f"?+Authorization=Bearer%20{TOKEN}", None)]
        read, operate = bearer(tokens["read"]), bearer(tokens["operate"])
        made = [http.post("/api/v1/alerts", json=subscription(kind, url, key), headers=operate)
                for kind, url, key in urls]
        assert [m.status_code for m in made] == [201, 201, 201], [m.text for m in made]
        ids = [m.json()["id"] for m in made]
        assert made[0].json()["channel"] == "http://127.0.0.1:" + port + "/services/***"
        seen["created"] = "".join(m.text for m in made)
        seen["tests"] = "".join(
            http.post(f"/api/v1/alerts/{one}/test", headers=operate).text for one in ids)

        clock = SimulatedClock(T0 + timedelta(hours=1))
        crawl(ledger, job, clock.now(), "in_stock")  # back in stock: each subscription fires
        batch = deliver(ledger, clock)
        assert (batch.triggered, batch.failed, batch.dead) == (3, 3, 3), batch
        assert any("blocked_address" in error for error in batch.errors)
        assert len(hook.requests) == 2  # the test alert and the delivery, both answered 500
        seen["errors"] = "\n".join(batch.errors)
        ledger.catch_up()  # the runner's projector step: the deliveries in the read models

        head = ledger.source.head()
        seen["api events"] = http.get("/api/v1/events", params={"limit": 5000},
                                      headers=read).text
        assert "Delivery.Dead" in seen["api events"] and "Subscription.Created" in seen["api events"]
        seen["api alerts"] = http.get("/api/v1/alerts", headers=read).text + "".join(
            http.get(f"/api/v1/alerts/{one}", headers=read).text for one in ids)
        assert seen["api alerts"].count('"state":"dead"') == 3
        seen["sse"] = sse_text(http, read, head)
        seen["dashboard"] = dashboard_text(http, tokens["read"])
        seen["metrics"] = http.get("/metrics").text

    rows = ledger.backend.notification_rows(app.recorder, 0, 10_000)
    seen["stored_events"] = b"".join(row[4] + row[3].encode() for row in rows).decode("latin-1")
    assert len(rows) == head
    export = tmp_path / "export.jsonl"
    cli(tmp_path, store_url, "events", "export", "-o", str(export))
    seen["export"] = export.read_text()
    assert "Delivery.Failed" in seen["export"]
    seen["cli"] = (cli(tmp_path, store_url, "alerts", "list", "--json")
                   + cli(tmp_path, store_url, "alerts", "deliveries", "--json"))
    out, err = capfd.readouterr()
    seen["logs"] = caplog.text + out + err
    assert "attempt 1 failed" in seen["logs"]

    leaks = {(surface, secret) for surface, text in seen.items() for secret in PLANTED
             if secret in text}
    assert not leaks, sorted(leaks)
    assert json.loads(seen["export"].splitlines()[0])  # the export is what it should be
