"""The bot on the local crawl's path, on both backends: a fleet of real bot clients
against a served API crawls paginated catalogs of the store simulator (and a product
page that answers 404) and records exactly the events the embedded runner records on
the same simulator — the same types, streams and payloads, apart from times, lease
ids and who recorded them; a result the domain refuses ends the bot's attempt as a
failure; each driver's `RecordResult` names its actor and surface."""

from __future__ import annotations

import asyncio
import base64
import gzip
from collections import defaultdict
from collections.abc import Iterator
from contextlib import closing, contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
from api_server import api_server, bearer, bot_pages
from backends import open_ledger, settings_for, store_url

from api.app import create_app
from api.auth import TokenStore
from domain.values import CrawlTask
from ledger.bootstrap import Ledger, crawler_for
from ledger.cli.history import describe
from ledger.drivers.bot_client import run_bot
from ledger.drivers.embedded import EmbeddedRunner
from ledger.settings import Settings
from runtime.clock import SystemClock
from runtime.components import Components
from runtime.remote import BotPages
from simulator import SimulatorThread
from simulator.catalog import Simulation
from workers.crawl_pages import PageReader
from workers.extraction.adapters.base import Extraction, Page, Request
from workers.extraction.adapters.registry import Registry
from workers.fetching.addresses import AddressGuard

T0 = datetime(2026, 3, 1, tzinfo=UTC)
BACKENDS = ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]
#: payload fields that differ between two crawls of the same pages: times, leases and
#: who recorded what
VOLATILE = frozenset({"at", "expires_at", "due_at", "next_run_at", "retry_at", "observed_at",
                      "lease_id", "worker", "actor", "surface", "duration", "timestamp"})


def stable(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: stable(v) for k, v in value.items() if k not in VOLATILE}
    if isinstance(value, list):
        return [stable(v) for v in value]
    return value


def history(ledger: Ledger) -> dict[str, list[tuple[str, Any]]]:
    """Each stream's events (type, payload without `VOLATILE`), in order; the worker
    registry's streams left out (a runner is not a pair of bots)."""
    streams: dict[str, list[tuple[str, Any]]] = defaultdict(list)
    for envelope in ledger.source.read(0, 1_000_000):
        if not envelope.event_type.startswith("Worker."):
            streams[envelope.stream_id].append((envelope.event_type, stable(envelope.payload)))
    return dict(streams)


def recorders(ledger: Ledger) -> set[tuple[str, str]]:
    """(actor, surface) of every recorded crawl result."""
    return {(e.payload["actor"], e.payload["surface"]) for e in ledger.source.read(0, 1_000_000)
            if e.event_type in ("CrawlJob.Succeeded", "CrawlJob.Failed")}


def seed(ledger: Ledger, sim: SimulatorThread) -> str:
    """Each simulated store's catalog (a dispensary's through its entry point), and a
    product page that answers 404; returns that page's job id."""
    for store in sim.urls.stores:
        store_id = ledger.app.register_store(name=store.spec.name, base_url=store.base_url,
                                             platform=store.platform, now=T0, crawl_delay=0,
                                             max_concurrency=4)
        kind = "entry_point" if store.platform == "dispensary" else "catalog"
        ledger.app.schedule_job(kind=kind, url=store.entry_url, store_id=store_id, now=T0)
    return str(ledger.app.schedule_job(kind="product_page", now=T0,
                                       url=f"{store.base_url}/no-such-product",
                                       store_id=store_id))


@contextmanager
def served(ledger: Ledger, pages: BotPages | None = None) -> Iterator[tuple[str, str]]:
    """The API on loopback (its bot path reading pages as `serve` does, or with
    `pages`), and a bot token."""
    tokens = TokenStore(ledger.tables.tokens)
    secret = tokens.create("bot", "fleet", T0)[0]
    with bot_pages(ledger) as default:
        app = create_app(ledger, tokens, SystemClock(), bot_pages=pages or default)
        with api_server(app) as url:
            yield url, secret


def fleet(url: str, secret: str, settings: Settings, bots: int = 2) -> None:
    """`bots` real bot clients, two crawls at a time each, until the queue is empty."""
    async def crawl() -> None:
        await asyncio.gather(*(run_bot(url, secret, f"bot-{n}", 2,
                                       AddressGuard(settings.allow_networks),
                                       settings.user_agent, until_idle=True)
                               for n in range(1, bots + 1)))
    asyncio.run(crawl())


def run_embedded(ledger: Ledger, settings: Settings) -> None:
    async def crawl() -> None:
        async with crawler_for(settings) as crawler:
            runner = EmbeddedRunner(ledger, crawler, SystemClock(), concurrency=4,
                                    tick_seconds=0.02)
            await runner.run(until_idle=True)
    asyncio.run(crawl())


@pytest.fixture(scope="module")
def simulator() -> Iterator[SimulatorThread]:
    # catalogs of 60-120 products: the dispensary GraphQL API pages them (50 a page)
    simulation = Simulation(seed=5, store_count=3, min_products=60, max_products=120)
    with SimulatorThread(simulation=simulation) as sim:
        yield sim


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_bot_fleet_records_the_events_the_embedded_runner_records(
        backend: str, simulator: SimulatorThread, tmp_path: Path) -> None:
    with store_url(backend, tmp_path / "runner") as url, \
            open_ledger(url, tmp_path / "runner") as ledger:
        gone_job = seed(ledger, simulator)
        run_embedded(ledger, settings_for(url, tmp_path / "runner"))
        expected, by_runner = history(ledger), recorders(ledger)
    with store_url(backend, tmp_path / "bots") as url, \
            open_ledger(url, tmp_path / "bots") as ledger:
        assert seed(ledger, simulator) == gone_job
        with served(ledger) as (api, secret):
            fleet(api, secret, settings_for(url, tmp_path / "bots"))
        found, by_bots = history(ledger), recorders(ledger)
    succeeded = [payload for events in expected.values() for kind, payload in events
                 if kind == "CrawlJob.Succeeded"]
    assert max(p["outcome"]["pages"] for p in succeeded) > 1  # a paginated catalog
    assert sum(1 for events in expected.values() for kind, _ in events
               if kind == "Product.Observed") > 150
    # the 404 product page is gone, as locally: no http_4xx failure
    assert [kind for kind, _ in found[gone_job]][-2:] == ["CrawlJob.Succeeded",
                                                          "CrawlJob.Completed"]
    assert dict(found[gone_job])["CrawlJob.Succeeded"]["outcome"]["extractor"] == "gone"
    assert found.keys() == expected.keys()
    for stream, events in expected.items():
        assert found[stream] == events, stream
    assert {surface for _, surface in by_runner} == {"runner"}
    assert all(actor.startswith("worker:") for actor, _ in by_runner)
    assert by_bots == {("token:fleet (bot)", "bot")}


class MisleadingResolver:
    """An entry-point reader that names a catalog at a URL no job may have: the domain
    refuses the result that would schedule it."""

    name = "misleading"
    version = "misleading/1"

    def detects(self, page: Page) -> bool:
        return True

    def start(self, task: CrawlTask) -> Request:
        return Request(task.url)

    def extract(self, page: Page, task: CrawlTask) -> Extraction:
        return Extraction(platform_store_id="shop-1", catalog_url="ftp://catalog.invalid/")


def test_a_bot_result_the_domain_refuses_ends_the_attempt_as_a_failure(
        shop: str, tmp_path: Path) -> None:
    with open_ledger(f"sqlite:///{tmp_path / 'ledger.sqlite'}", tmp_path) as ledger:
        store = ledger.app.register_store(name="Laden", base_url=shop, platform="generic",
                                          now=T0, crawl_delay=0)
        job = ledger.app.schedule_job(kind="entry_point", url=f"{shop}/lamp", store_id=store,
                                      now=T0)
        reader = PageReader(Registry([MisleadingResolver()], aliases={"generic": "misleading"}))
        with closing(BotPages(ledger, reader, SystemClock())) as pages, \
                served(ledger, pages) as (api, secret), \
                httpx.Client(base_url=api, headers=bearer(secret)) as http:
            (lease,) = http.post("/api/v1/bot/leases", json={"worker": "w"}).json()["leases"]
            page = base64.b64encode(gzip.compress(b"<html></html>")).decode()
            answer = http.post(f"/api/v1/bot/leases/{lease['lease_id']}/result", json={
                "job_id": lease["job_id"], "ok": True, "http_status": 200,
                "content_type": "text/html", "body_gzip_b64": page})
            assert answer.status_code == 200, answer.text
        recorded = ledger.app.get_job(job)
        assert recorded.state != "leased"
        (failed,) = [e for e in ledger.source.read(0, 1000) if e.event_type == "CrawlJob.Failed"]
    assert failed.payload["error_kind"] == "worker_error"
    assert failed.payload["message"].startswith("result refused: bad URL 'ftp://catalog.invalid/'")
    assert (failed.payload["actor"], failed.payload["surface"]) == ("token:fleet (bot)", "bot")


def test_the_faust_crawl_agent_records_its_results_as_the_agent(shop: str,
                                                                tmp_path: Path) -> None:
    from streams.agents import crawl
    from streams.records import WorkItem
    from streams.resources import Resources, WorkerOptions

    with open_ledger(f"sqlite:///{tmp_path / 'ledger.sqlite'}", tmp_path) as ledger:
        store = ledger.app.register_store(name="Laden", base_url=shop, platform="generic",
                                          now=T0, crawl_delay=0)
        job = ledger.app.schedule_job(kind="product_page", url=f"{shop}/lamp", store_id=store,
                                      now=T0)
        settings = settings_for(f"sqlite:///{tmp_path / 'ledger.sqlite'}", tmp_path)
        components = Components(open_ledger=lambda: ledger,
                                open_crawler=lambda: crawler_for(settings),
                                data_dir=ledger.data_dir)

        async def items() -> Any:
            yield WorkItem(job_id=str(job), url=f"{shop}/lamp", host="127.0.0.1")

        async def run() -> None:
            res = Resources(components, WorkerOptions(db_threads=1))
            try:
                await crawl(res, items(), 0)
            finally:
                await res._stack.aclose()
                res.db.close()
        asyncio.run(run())
        (actor, surface), = recorders(ledger)
        (succeeded,) = [e for e in ledger.source.read(0, 1000)
                        if e.event_type == "CrawlJob.Succeeded"]
    assert surface == "agent" and actor.startswith("worker:") and actor.endswith(":0")
    # `jobs show` says who recorded it
    assert describe(succeeded).startswith(f"by {actor} via agent: HTTP 200, 1 items")
