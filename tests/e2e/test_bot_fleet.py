"""Bots on the store simulator, as an operator runs them: `crawl-ledger serve` and two
`crawl-ledger bot` processes crawl every simulated platform (paginated catalogs
included) to idle and the ledger holds the same products and events as the embedded
runner on the same seed; a bot killed mid-lease gives its job back to the queue once
the lease's TTL has run out, and another bot finishes it."""

from __future__ import annotations

import contextlib
import signal
import sqlite3
import subprocess
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
from backends import LOOPBACK_ENV
from fleet import NO_BACKOFF
from test_api import bearer
from test_observability import free_port

from api.auth import TokenStore
from ledger.bootstrap import Ledger, bootstrap
from ledger.settings import Settings
from simulator import SimulatorThread
from simulator.catalog import Simulation

T0 = datetime(2026, 3, 1, tzinfo=UTC)
#: stores found by discovery get this crawl delay (the default, 1 s per host, would make
#: the ~100 images per simulated store take minutes)
FAST = {"LEDGER_DEFAULT_CRAWL_DELAY": "0.02"}


def seed(data_dir: Path, sim: SimulatorThread, phase: str) -> None:
    """The demo's jobs in two phases, so that the stores are known before the feeds
    that link to them are read (otherwise the order two bots happen to crawl in decides
    which links are followed): `discovery` finds the stores, whose chain crawls catalogs
    (paginated platform APIs, dispensary GraphQL) and product pages; `feeds` follows the
    feeds' links."""
    ledger = bootstrap(Settings.from_env({**LOOPBACK_ENV, "LEDGER_DATA_DIR": str(data_dir)}))
    try:
        now = datetime.now(UTC)
        if phase == "discovery":
            ledger.app.schedule_job(kind="store_discovery", url=sim.urls.locator_url,
                                    every=86400, now=now)
        else:
            for feed in ("rss.xml", "atom.xml", "social.json"):
                ledger.app.schedule_job(kind="feed", url=f"{sim.urls.control_url}/feeds/{feed}",
                                        every=4 * 3600, now=now)
    finally:
        ledger.close()


def stored_images(data_dir: Path) -> int:
    """How many `Product.ImageStored` events the store holds (read-only, while others write)."""
    with contextlib.closing(sqlite3.connect(f"file:{data_dir / 'ledger.sqlite'}?mode=ro",
                                            uri=True, timeout=30)) as db:
        return int(db.execute("SELECT count(*) FROM stored_events WHERE topic = "
                              "'domain.product:Product.ImageStored'").fetchone()[0])


def facts(data_dir: Path) -> tuple[list[tuple[str, ...]], Counter[str], int]:
    """Products (name, price, currency, stock), event types except the worker registry's,
    and how many catalog pages were fetched."""
    ledger = bootstrap(Settings.from_env({**LOOPBACK_ENV, "LEDGER_DATA_DIR": str(data_dir)}))
    try:
        ledger.catch_up()
        products = sorted((p["name"], str(p["min_price"]), str(p["currency"]),
                           str(p["availability"])) for p in ledger.read.products())
        events = ledger.source.read(0, 1_000_000)
        kinds = Counter(e.event_type for e in events if not e.event_type.startswith("Worker."))
        pages = sum(int(e.payload["outcome"].get("pages") or 0) for e in events
                    if e.event_type == "CrawlJob.Succeeded")
        return products, kinds, pages
    finally:
        ledger.close()


class Serving:
    """`crawl-ledger serve` on a free port, with a read and a bot token."""

    def __init__(self, binary: str, env: dict[str, str], *args: str) -> None:
        ledger = bootstrap(Settings.from_env({**LOOPBACK_ENV,
                                              "LEDGER_DATA_DIR": env["LEDGER_DATA_DIR"]}))
        try:
            tokens = TokenStore(ledger.tables.tokens)
            self.read = tokens.create("read", "read", T0)[0]
            self.bot = tokens.create("bot", "bot", T0)[0]
        finally:
            ledger.close()
        self.url = f"http://127.0.0.1:{free_port()}"
        self.proc = subprocess.Popen([binary, "serve", "--port", self.url.rsplit(":", 1)[1],
                                      *args], env=env, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE, text=True)

    def up(self) -> bool:
        assert self.proc.poll() is None, self.proc.communicate()[1]
        try:
            return httpx.get(f"{self.url}/healthz", timeout=5).status_code == 200
        except httpx.TransportError:
            return False

    def job(self, job_id: str) -> dict[str, Any]:
        """The job's status row, with its event history under `events`."""
        answer = httpx.get(f"{self.url}/api/v1/jobs/{job_id}", headers=bearer(self.read)).json()
        return {**answer["status"], "events": answer["events"]}

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.communicate(timeout=30)


def test_two_bots_crawl_the_simulator_as_the_embedded_runner_does(
        tmp_path: Path, crawl_ledger_bin: str, cli_env: Callable[..., dict[str, str]],
        wait_for: Callable[..., Any]) -> None:
    # catalogs of 60-120 products: the dispensary GraphQL API pages them (50 a page)
    simulation = Simulation(seed=21, store_count=5, min_products=60, max_products=120)
    with SimulatorThread(simulation=simulation) as sim:
        for phase in ("discovery", "feeds"):
            seed(tmp_path / "embedded", sim, phase)
            done = subprocess.run([crawl_ledger_bin, "run", "--until-idle"], timeout=300,
                                  env=cli_env(tmp_path / "embedded", **FAST), capture_output=True,
                                  text=True)
            assert done.returncode == 0, done.stderr
        expected = facts(tmp_path / "embedded")

        (tmp_path / "api").mkdir()
        server = Serving(crawl_ledger_bin, cli_env(tmp_path / "api", **FAST))
        # bots crawl pages only: images are downloaded beside the server that serves them
        imager = subprocess.Popen([crawl_ledger_bin, "images", "fetch", "--every", "0.5"],
                                  env=cli_env(tmp_path / "api", **FAST), stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True)
        try:
            wait_for(server.up, "serve answering")
            for phase in ("discovery", "feeds"):
                seed(tmp_path / "api", sim, phase)
                bots = [subprocess.Popen(
                    [crawl_ledger_bin, "bot", "--server", server.url, "--until-idle",
                     "--concurrency", "2", "--name", f"bot-{n}"], stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE, text=True,
                    env=cli_env(tmp_path / f"bot-{n}", LEDGER_BOT_TOKEN=server.bot))
                    for n in (1, 2)]
                outputs = [bot.communicate(timeout=300) for bot in bots]
                assert [bot.returncode for bot in bots] == [0, 0], outputs
            workers = httpx.get(f"{server.url}/api/v1/workers",
                                headers=bearer(server.read)).json()["items"]
            wanted = expected[1]["Product.ImageStored"]
            wait_for(lambda: stored_images(tmp_path / "api") >= wanted,
                     "the images fetched beside the server", timeout=300)
        finally:
            imager.terminate()
            imager_out = imager.communicate(timeout=60)
            server.stop()
    found = facts(tmp_path / "api")
    assert len(expected[0]) > 50
    assert expected[1]["CrawlJob.Succeeded"] < expected[2]  # some crawls had several pages
    assert found[0] == expected[0]
    assert expected[1]["Product.ImageStored"] > 0
    assert imager.returncode == 0, imager_out
    assert "download(s)" in imager_out[0]
    assert found[1] == expected[1]
    assert found[2] == expected[2]
    assert sorted(w["name"] for w in workers) == ["bot:bot-1", "bot:bot-2"]
    assert all(w["state"] == "departed" for w in workers)


@pytest.fixture
def hanging_shop() -> Iterator[tuple[str, threading.Event]]:
    """A product page that answers only once `release` is set."""
    release = threading.Event()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            if self.path == "/robots.txt":
                body = b"User-agent: *\nAllow: /\n"
            else:
                release.wait(120)
                body = (b'<html><script type="application/ld+json">{"@type": "Product", "name": '
                        b'"Slow", "offers": {"price": "5.00", "priceCurrency": "EUR"}}</script>')
            try:
                self.send_response(200)
                self.send_header("Content-Type", "text/html")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
            except (BrokenPipeError, ConnectionResetError):  # the killed bot's connection
                return

        def log_message(self, *args: object) -> None:
            return None

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}", release
    release.set()
    server.shutdown()
    server.server_close()


def test_a_bot_killed_mid_lease_gives_the_job_back_after_the_ttl(
        hanging_shop: tuple[str, threading.Event], tmp_path: Path, crawl_ledger_bin: str,
        cli_env: Callable[..., dict[str, str]], wait_for: Callable[..., Any]) -> None:
    shop, release = hanging_shop
    ledger: Ledger = bootstrap(Settings.from_env({**LOOPBACK_ENV,
                                                  "LEDGER_DATA_DIR": str(tmp_path / "api")}))
    try:
        store = ledger.app.register_store(name="Slow", base_url=shop, platform="generic",
                                          now=datetime.now(UTC), crawl_delay=0.0)
        job = str(ledger.app.schedule_job(kind="product_page", url=f"{shop}/item",
                                          store_id=store, now=datetime.now(UTC),
                                          retry_policy=NO_BACKOFF))
    finally:
        ledger.close()
    server = Serving(crawl_ledger_bin, cli_env(tmp_path / "api"), "--lease-ttl", "2")
    try:
        wait_for(server.up, "serve answering")
        doomed = subprocess.Popen([crawl_ledger_bin, "bot", "--server", server.url,
                                   "--name", "doomed"], stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL,
                                  env=cli_env(tmp_path / "doomed", LEDGER_BOT_TOKEN=server.bot))
        wait_for(lambda: server.job(job)["state"] == "leased", "the doomed bot's lease")
        doomed.send_signal(signal.SIGKILL)
        doomed.wait(30)
        release.set()  # the page answers now, for whoever fetches it next
        after = subprocess.run([crawl_ledger_bin, "bot", "--server", server.url,
                                "--until-idle", "--name", "heir"], capture_output=True,
                               text=True, timeout=120,
                               env=cli_env(tmp_path / "heir", LEDGER_BOT_TOKEN=server.bot))
        if "0 leased" in after.stdout:  # idle before the TTL ran out: once more, later
            wait_for(lambda: datetime.fromisoformat(server.job(job)["lease_expires_at"])
                     < datetime.now(UTC), "the lease's TTL")
            after = subprocess.run([crawl_ledger_bin, "bot", "--server", server.url,
                                    "--until-idle", "--name", "heir"], capture_output=True,
                                   text=True, timeout=120,
                                   env=cli_env(tmp_path / "heir", LEDGER_BOT_TOKEN=server.bot))
        assert after.returncode == 0, after.stderr
        shown = server.job(job)
    finally:
        server.stop()
    history = [event["event_type"] for event in shown["events"]]
    assert shown["state"] == "completed", shown
    assert history.count("CrawlJob.Leased") == 2, history
    expired = history.index("CrawlJob.LeaseExpired")
    assert history[expired:] == ["CrawlJob.LeaseExpired", "CrawlJob.Rescheduled",
                                 "CrawlJob.Dispatched", "CrawlJob.Leased",
                                 "CrawlJob.Succeeded", "CrawlJob.Completed"], history
    assert shown["events"][expired + 3]["payload"]["worker"] == "bot:heir"
