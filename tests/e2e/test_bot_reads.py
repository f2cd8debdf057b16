"""The bot's lease path reads only, on both backends: a lease request chooses due jobs
from the read models as they are, projects nothing (every projection's position is
what it was), says how far behind they are (`lag`, `X-Ledger-Lag`), and a job leased
that the lagging read models still show as due is never leased twice."""

from __future__ import annotations

from datetime import UTC, datetime

import httpx
from api_server import api_server, bearer, bot_pages

from api.app import create_app
from api.auth import TokenStore
from ledger.bootstrap import Ledger
from projections.framework import positions
from runtime.clock import SystemClock
from runtime.projector import Projector

T0 = datetime(2026, 3, 1, tzinfo=UTC)


def every_position(ledger: Ledger) -> dict[str, int]:
    with ledger.db.transaction() as tx:
        return positions(tx, ledger.projections())


def test_a_lease_request_projects_nothing_and_reports_the_lag(ledger: Ledger) -> None:
    app = ledger.app
    store = app.register_store(name="Shop", base_url="https://shop.example",
                               platform="shopify", now=T0)
    jobs = {str(app.schedule_job(kind="product_page", url=f"https://shop.example/p/{n}",
                                 now=T0, store_id=store)) for n in range(3)}
    ledger.catch_up()  # the read models show the three jobs due
    app.schedule_job(kind="product_page", url="https://shop.example/p/late", now=T0,
                     store_id=store)  # recorded, not yet projected
    secret = TokenStore(ledger.tables.tokens).create("bot", "bot", T0)[0]
    idle = Projector(ledger)  # the server's projector, not running: nothing catches up
    before, behind = every_position(ledger), ledger.source.head() - ledger.projection_position()
    assert behind > 0
    with bot_pages(ledger) as pages, api_server(create_app(
            ledger, TokenStore(ledger.tables.tokens), SystemClock(), bot_pages=pages,
            projector=idle)) as url, httpx.Client(base_url=url, headers=bearer(secret)) as http:
        first = http.post("/api/v1/bot/leases", json={"worker": "b1", "max": 2})
        assert first.status_code == 200
        lag = first.json()["lag"]  # the unprojected job, and the bot's registration
        assert lag > behind and first.headers["X-Ledger-Lag"] == str(lag)
        leased = {lease["job_id"] for lease in first.json()["leases"]}
        assert len(leased) == 2 and leased <= jobs
        assert every_position(ledger) == before  # the lease projected nothing
        # the read models still show the two as due: they are not leased again
        second = http.post("/api/v1/bot/leases", json={"worker": "b2", "max": 5}).json()
        assert {lease["job_id"] for lease in second["leases"]} == jobs - leased
        assert second["lag"] > lag  # the leases recorded since, not yet applied
        assert every_position(ledger) == before
        assert http.post("/api/v1/bot/leases",
                         json={"worker": "b3", "max": 5}).json()["leases"] == []
        assert every_position(ledger) == before
    ledger.catch_up()
    assert {j["job_id"] for j in ledger.read.jobs(state="leased")} == jobs
