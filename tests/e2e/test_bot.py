"""Bots behind NAT: a `crawl-ledger bot` process that reaches only the API crawls a
loopback shop to idle and the ledger records what the embedded runner records for
the same pages; a retried submit records nothing twice; an expired lease is refused
(409) and its job is back in the queue."""

from __future__ import annotations

import base64
import gzip
import json
import subprocess
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
from backends import LOOPBACK_ENV
from conftest import PAGES
from test_api import bearer, serving

from ledger.bootstrap import Ledger, bootstrap
from ledger.settings import Settings


def seeded(data_dir: Path, shop: str) -> Ledger:
    ledger = bootstrap(Settings.from_env({**LOOPBACK_ENV, "LEDGER_DATA_DIR": str(data_dir)}))
    now = datetime.now(UTC)
    store = ledger.app.register_store(name="Laden", base_url=shop, platform="generic", now=now,
                                      crawl_delay=0.0, max_concurrency=4)
    for path in ("/lamp", "/chair"):
        ledger.app.schedule_job(kind="product_page", url=shop + path, now=now, store_id=store)
    return ledger


def facts(ledger: Ledger) -> tuple[list[tuple[str, ...]], Counter[str]]:
    ledger.catch_up()
    products = sorted((p["name"], str(p["min_price"]), p["currency"], p["availability"])
                      for p in ledger.read.products())
    return products, Counter(e.event_type for e in ledger.source.read(0, 10_000))


def test_a_bot_crawls_through_the_api_as_a_local_worker_would(
        shop: str, tmp_path: Path, crawl_ledger_bin: str,
        cli_env: Callable[..., dict[str, str]]) -> None:
    embedded = seeded(tmp_path / "embedded", shop)
    embedded.close()
    done = subprocess.run([crawl_ledger_bin, "run", "--until-idle"], timeout=120,
                          env=cli_env(tmp_path / "embedded"), capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    local = bootstrap(Settings.from_env({**LOOPBACK_ENV,
                                         "LEDGER_DATA_DIR": str(tmp_path / "embedded")}))
    expected = facts(local)
    (runner,) = local.read.workers()
    assert runner["driver"] == "embedded" and runner["departure"] == "idle"
    local.close()

    ledger = seeded(tmp_path / "api", shop)
    try:
        with serving(ledger) as (url, secrets):
            bot = subprocess.run([crawl_ledger_bin, "bot", "--server", url, "--until-idle",
                                  "--concurrency", "2"], timeout=120, capture_output=True,
                                 text=True, env=cli_env(tmp_path / "bot-home",
                                                        LEDGER_BOT_TOKEN=secrets["bot"]))
            assert bot.returncode == 0, bot.stderr
            assert "2 leased, 2 submitted (0 failures)" in bot.stdout
            found = facts(ledger)
            workers = httpx.get(f"{url}/api/v1/workers", headers=bearer(secrets["read"]))
            (registered,) = workers.json()["items"]
            assert registered["driver"] == "bot" and registered["state"] == "departed"
            assert registered["heartbeat"]["rss_bytes"] > 0
        assert found[0] == expected[0] and len(found[0]) == 2
        assert ("Lampe", "49.00", "EUR", "in_stock") in found[0], found[0]
        assert ("Stuhl", "129.00", "EUR", "in_stock") in found[0], found[0]
        assert found[1] == expected[1]
    finally:
        ledger.close()


def test_submits_are_idempotent_and_expired_leases_refused(shop: str, tmp_path: Path) -> None:
    ledger = seeded(tmp_path / "api", shop)
    try:
        with serving(ledger) as (url, secrets), httpx.Client(
                base_url=url, headers=bearer(secrets["bot"])) as http:
            assert httpx.get(f"{url}/api/v1/jobs", headers=bearer(secrets["bot"])) \
                .status_code == 403  # a bot token is for the bot API only
            leases = http.post("/api/v1/bot/leases", json={"worker": "w", "max": 2}).json()
            first, second = leases["leases"]
            body = PAGES["/lamp"].encode()
            result = {"job_id": first["job_id"], "ok": True, "http_status": 200,
                      "final_url": first["url"], "content_type": "text/html",
                      "body_gzip_b64": base64.b64encode(gzip.compress(body)).decode()}
            once = http.post(f"/api/v1/bot/leases/{first['lease_id']}/result", json=result)
            again = http.post(f"/api/v1/bot/leases/{first['lease_id']}/result", json=result)
            assert once.status_code == 200 and not once.json()["duplicate"]
            assert again.status_code == 200 and again.json() == {
                "job_id": first["job_id"], "duplicate": True, "events": 0, "products": 0,
                "next": None}
            bomb = dict(result, job_id=second["job_id"], body_gzip_b64=base64.b64encode(
                gzip.compress(b"\0" * (9 * 1024 * 1024))).decode())
            refused = http.post(f"/api/v1/bot/leases/{second['lease_id']}/result", json=bomb)
            assert refused.status_code == 422 and "limit" in refused.json()["detail"]
            later = datetime.now(UTC) + timedelta(seconds=leases["ttl"] + 1)
            ledger.app.reap_expired_leases([second["job_id"]], later)
            late = http.post(f"/api/v1/bot/leases/{second['lease_id']}/result",
                             json=dict(result, job_id=second["job_id"]))
            assert late.status_code == 409, late.text
        assert ledger.app.get_job(second["job_id"]).state == "scheduled"  # back in the queue
        events = json.dumps([e.event_type for e in ledger.source.read(0, 1000)])
        assert events.count("CrawlJob.Succeeded") == 1
    finally:
        ledger.close()
