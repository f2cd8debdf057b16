"""A store fleet on the simulator and a real `crawl-ledger run` process to break.

Four catalog jobs on simulated stores; two stores have a long crawl delay, so
their crawls are still in flight (leased) after the fast ones are recorded:
that is where the faults strike.
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from backends import LOOPBACK_ENV

from domain.crawl_job import RetryPolicy
from domain.envelope import Envelope
from ledger.bootstrap import bootstrap
from ledger.settings import Settings
from runtime.ledger import Ledger
from simulator import SimulatorThread

CLI = str(Path(sys.executable).with_name("crawl-ledger"))
SLOW = ("store-1", "store-3")
NO_BACKOFF = RetryPolicy(max_attempts=3, backoff_base=0.0, backoff_cap=0.0)


@dataclass
class Fleet:
    data_dir: Path
    sim: SimulatorThread
    jobs: dict[str, str]  # store key -> catalog job id
    stores: dict[str, str]  # store key -> store id
    store_url: str | None = None  # LEDGER_STORE (None: SQLite in the data dir)

    @property
    def slow_jobs(self) -> set[str]:
        return {self.jobs[k] for k in SLOW}

    @property
    def fast_jobs(self) -> set[str]:
        return set(self.jobs.values()) - self.slow_jobs

    def settings(self) -> Settings:
        return Settings.from_env(self.ledger_env())

    def ledger_env(self) -> dict[str, str]:
        store = {"LEDGER_STORE": self.store_url} if self.store_url else {}
        return {**LOOPBACK_ENV, "LEDGER_DATA_DIR": str(self.data_dir), **store}

    @contextmanager
    def ledger(self) -> Iterator[Ledger]:
        opened = bootstrap(self.settings())
        try:
            yield opened
        finally:
            opened.close()

    def envelopes(self) -> list[Envelope]:
        with self.ledger() as ledger:
            return ledger.source.read(0, 1_000_000)

    def env(self, **extra: str) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("LEDGER_")}
        return env | self.ledger_env() | {"NO_COLOR": "1", "TERM": "dumb"} | extra

    def start(self, *args: str) -> subprocess.Popen[str]:
        return subprocess.Popen([CLI, "run", "--concurrency", "4", *args], env=self.env(),
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                                stdin=subprocess.DEVNULL)

    def run_until_idle(self) -> None:
        done = subprocess.run([CLI, "run", "--until-idle"], env=self.env(), timeout=120,
                              capture_output=True, text=True, stdin=subprocess.DEVNULL, check=False)
        assert done.returncode == 0, done.stderr

    def job_states(self) -> dict[str, str]:
        """The job-status read model as the running process left it (read-only)."""
        path = self.data_dir / "readmodels.sqlite"
        try:
            with sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5) as conn:
                return dict(conn.execute("SELECT job_id, state FROM job_status").fetchall())
        except sqlite3.OperationalError:
            return {}

    def slow_in_flight(self) -> bool:
        """The slow stores' crawls are in flight and every fast one has been recorded."""
        states = self.job_states()
        return all(states.get(j) == "leased" for j in self.slow_jobs) and all(
            states.get(j) not in (None, "dispatched", "leased") for j in self.fast_jobs)


@contextmanager
def fleet(tmp_path: Path, slow_delay: float = 60.0, store_url: str | None = None
          ) -> Iterator[Fleet]:
    data_dir = tmp_path / "data"
    with SimulatorThread(stores=5, seed=5) as sim:
        box = Fleet(data_dir, sim, {}, {}, store_url)
        ledger = bootstrap(box.settings())
        now = datetime.now(UTC)
        jobs, stores = {}, {}
        try:
            for served in sim.urls.stores:
                if served.platform == "dispensary":
                    continue
                stores[served.key] = str(ledger.app.register_store(
                    name=served.spec.name, base_url=served.base_url, platform=served.platform,
                    now=now, crawl_delay=slow_delay if served.key in SLOW else 0.0))
                jobs[served.key] = str(ledger.app.schedule_job(
                    kind="catalog", url=served.entry_url, store_id=stores[served.key],
                    every=3600, now=now, retry_policy=NO_BACKOFF))
        finally:
            ledger.close()
        box.jobs, box.stores = jobs, stores
        yield box


def wait_for(predicate: Callable[[], Any], what: str, timeout: float = 60.0) -> Any:
    deadline = time.monotonic() + timeout
    while not (value := predicate()):
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.05)
    return value


def make_slow_fast(fleet: Fleet) -> None:
    """The operator's fix before recovering: the slow stores' delay goes."""
    with fleet.ledger() as ledger:
        for key in SLOW:
            ledger.app.change_store_policy(fleet.stores[key], now=datetime.now(UTC),
                                           crawl_delay=0.0)
