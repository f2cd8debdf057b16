"""A bot token acts only for its own worker names, over real HTTP on loopback, on both
backends: the first token to lease as a name owns it; another token leasing as it or
making it depart is refused (403) and nothing is recorded."""

from __future__ import annotations

from datetime import UTC, datetime

import httpx
from security_api import api_on_loopback, bearer

from ledger.bootstrap import Ledger

T0 = datetime(2026, 3, 1, 8, 0, tzinfo=UTC)


def _event_count(ledger: Ledger) -> int:
    return len(ledger.source.read(0, 100_000))


def _workers(ledger: Ledger) -> dict[str, str | None]:
    ledger.catch_up()
    return {row["name"]: row["departed_at"] for row in ledger.read.workers()}


def test_a_bot_token_cannot_lease_as_or_depart_another_bots_worker(ledger: Ledger) -> None:
    with api_on_loopback(ledger) as (url, tokens), httpx.Client(base_url=url) as api:
        alpha = bearer(tokens.create("bot", "alpha", T0)[0])
        intruder = bearer(tokens.create("bot", "intruder", T0)[0])
        assert api.post("/api/v1/bot/leases", json={"worker": "w1"}, headers=alpha
                        ).status_code == 200
        events_before = _event_count(ledger)

        stolen = api.post("/api/v1/bot/leases", json={"worker": "w1"}, headers=intruder)
        departed = api.post("/api/v1/bot/depart", json={"worker": "w1", "reason": "gone"},
                            headers=intruder)
        ghost = api.post("/api/v1/bot/depart", json={"worker": "never-leased"},
                         headers=intruder)

        for refused in (stolen, departed, ghost):
            assert refused.status_code == 403, refused.text
            assert "acts only for the worker names it leased as" in refused.json()["detail"]
        assert _event_count(ledger) == events_before
        assert _workers(ledger) == {"bot:w1": None}

        assert api.post("/api/v1/bot/leases", json={"worker": "w2"}, headers=intruder
                        ).status_code == 200
        assert api.post("/api/v1/bot/depart", json={"worker": "w1"}, headers=alpha
                        ).status_code == 200
        workers = _workers(ledger)
        assert workers["bot:w1"] is not None and workers["bot:w2"] is None


def test_a_bot_token_cannot_extend_or_submit_another_bots_lease(ledger: Ledger) -> None:
    store = ledger.app.register_store(name="Shop", base_url="https://shop.example",
                                      platform="generic", now=T0)
    ledger.app.schedule_job(kind="product_page", url="https://shop.example/p/1", now=T0,
                            store_id=store)
    with api_on_loopback(ledger) as (url, tokens), httpx.Client(base_url=url) as api:
        alpha = bearer(tokens.create("bot", "alpha", T0)[0])
        intruder = bearer(tokens.create("bot", "intruder", T0)[0])
        (lease,) = api.post("/api/v1/bot/leases", json={"worker": "w1"},
                            headers=alpha).json()["leases"]
        base = f"/api/v1/bot/leases/{lease['lease_id']}"
        before = _event_count(ledger)

        extended = api.post(f"{base}/heartbeat", json={"job_id": lease["job_id"]},
                            headers=intruder)
        submitted = api.post(f"{base}/result", headers=intruder, json={
            "job_id": lease["job_id"], "ok": False, "error_kind": "http_5xx",
            "message": "not mine"})

        for refused in (extended, submitted):
            assert refused.status_code == 403, refused.text
            assert "'bot:w1' is not this token's" in refused.json()["detail"]
        assert _event_count(ledger) == before
        assert api.post(f"{base}/heartbeat", json={"job_id": lease["job_id"]},
                        headers=alpha).status_code == 200
