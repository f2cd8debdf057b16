"""Fixtures for the end-to-end tests: the embedded runner against the simulator.

`demo_harness(config, faults=…)` builds what `run_embedded_demo` builds (a demo
data dir, a ledger, the simulator on loopback, a simulated clock) but hands the
pieces to the test, so a test can pass per-store faults, seed its own jobs and
read the event log afterwards. Everything is closed when the test ends.

For the subprocess tests, the `cli_env` fixture gives the environment a
`crawl-ledger` child process needs and `wait_for` polls with a deadline.
"""

from __future__ import annotations

import asyncio
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, TypeVar

import pytest
from backends import LOOPBACK_ENV

from domain.envelope import Envelope
from ledger.bootstrap import Ledger, bootstrap, crawler_for
from ledger.drivers.demo import DEMO_START, DemoConfig, demo_settings, run_cycles, seed_jobs
from ledger.drivers.demo_report import all_envelopes
from ledger.drivers.embedded import EmbeddedRunner, RunStats
from ledger.settings import Settings
from runtime.clock import SimulatedClock
from simulator import FaultConfig, SimulatorThread

T = TypeVar("T")
CLI = str(Path(sys.executable).with_name("crawl-ledger"))


@dataclass
class Harness:
    """A demo run whose pieces the test can reach."""

    settings: Settings
    config: DemoConfig
    ledger: Ledger
    sim: SimulatorThread
    clock: SimulatedClock
    stats: list[RunStats] = field(default_factory=list)

    def seed_demo_jobs(self) -> None:
        seed_jobs(self.ledger, self.sim.urls.locator_url, self.sim.urls.control_url, self.clock)

    def until_idle(self) -> RunStats:
        """Crawl until nothing is due, queued or running (the demo's inner loop)."""
        stats = asyncio.run(self._run_once())
        self.stats.append(stats)
        return stats

    async def _run_once(self) -> RunStats:
        async with crawler_for(self.settings) as crawler:
            runner = EmbeddedRunner(self.ledger, crawler, self.clock,
                                    concurrency=self.config.concurrency, tick_seconds=0.2)
            return await runner.run(until_idle=True)

    def run_cycles(self) -> None:
        """The demo's cycles: epoch c, crawl until idle, advance the clock."""
        run_cycles(self.sim, self.clock, self.config, self._cycle)

    def _cycle(self) -> None:
        self.until_idle()

    def envelopes(self) -> list[Envelope]:
        return list(all_envelopes(self.ledger))

    def epoch_of(self, at: str) -> int:
        """The cycle (= simulator epoch) a simulated-clock timestamp falls in."""
        seconds = (_parse(at) - DEMO_START).total_seconds()
        assert seconds % self.config.cycle_seconds == 0, f"{at} is not a cycle start"
        return int(seconds // self.config.cycle_seconds)

    def store_keys(self) -> dict[str, str]:
        """Ledger store id -> simulator store key (matched on the base URL)."""
        by_url = {s.base_url: s.key for s in self.sim.urls.stores}
        return {e.stream_id: by_url[e.payload["base_url"]] for e in self.envelopes()
                if e.event_type == "Store.Registered"}


def _parse(text: str) -> datetime:
    return datetime.fromisoformat(text)


@pytest.fixture(scope="module")
def demo_harness(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[..., Harness]]:
    """Factory: `demo_harness(config, faults=None)` -> a started Harness in a fresh data dir.

    Module-scoped so one (slow) run can serve several tests; closed at the module's end.
    """
    opened: list[Harness] = []

    def make(config: DemoConfig,
             faults: FaultConfig | Mapping[str, Any] | None = None) -> Harness:
        base = Settings.from_env({**LOOPBACK_ENV, "LEDGER_DATA_DIR": str(tmp_path_factory.mktemp("e2e"))})
        settings = demo_settings(base, config)
        sim = SimulatorThread(stores=config.stores, seed=config.seed, faults=faults,
                              fault_rate=config.fault_rate)
        sim.start()
        harness = Harness(settings, config, bootstrap(settings), sim, SimulatedClock(DEMO_START))
        opened.append(harness)
        return harness

    yield make
    for harness in opened:
        harness.sim.stop()
        harness.ledger.close()


def _cli_env(data_dir: Path, **extra: str) -> dict[str, str]:
    """The environment of a `crawl-ledger` child: its own data dir, no terminal tricks."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("LEDGER_")}
    return env | LOOPBACK_ENV | {"LEDGER_DATA_DIR": str(data_dir), "COLUMNS": "120", "TERM": "dumb",
                  "NO_COLOR": "1"} | extra


def _wait_for(predicate: Callable[[], T], what: str, timeout: float = 60.0,
             interval: float = 0.05) -> T:
    """Poll `predicate` until it returns something truthy; fail after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout}s waiting for {what}")
        time.sleep(interval)


@pytest.fixture
def crawl_ledger_bin() -> str:
    assert Path(CLI).exists(), f"console script not installed at {CLI}"
    return CLI


@pytest.fixture
def cli_env() -> Callable[..., dict[str, str]]:
    """`cli_env(data_dir, **extra)`: the environment of a `crawl-ledger` child process."""
    return _cli_env


@pytest.fixture
def wait_for() -> Callable[..., Any]:
    """`wait_for(predicate, what, timeout=60)`: poll until truthy, fail at the deadline."""
    return _wait_for


PAGES = {
    "/lamp": ('<html lang="de-DE"><head><script type="application/ld+json">{"@type": "Product",'
              ' "name": "Lampe", "sku": "L1", "offers": {"price": "49.00", "priceCurrency": '
              '"EUR", "availability": "https://schema.org/InStock"}}</script></head></html>'),
    "/chair": ('<html lang="de-DE"><body><h1 class="product-title">Stuhl</h1><span class='
               '"price">129,00 €</span><p class="availability">Auf Lager</p></body></html>'),
    "/robots.txt": "User-agent: *\nAllow: /\n",
}


@pytest.fixture
def shop() -> Iterator[str]:
    """A loopback shop serving `PAGES` (two product pages, one without structured data)."""
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            body = PAGES.get(self.path, "").encode()
            self.send_response(200 if body else 404)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            return None

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()
