"""Scale out and in under load: crawl+project workers join a running distributed fleet,
then workers leave it (SIGTERM, and kill -9 mid-crawl), the relay running throughout.

No result is lost or recorded twice, the read models equal a rebuild, and each
worker holds a bounded number of PostgreSQL connections (pg_stat_activity, by the
application name `Cluster` gives each process).
"""

from __future__ import annotations

import signal
import threading
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import backends
import psycopg
import pytest
from backends import LOOPBACK_ENV
from fleet import wait_for
from invariants import SETTLED, check, no_duplicate_effects, no_loss, rebuild_differences
from kafka_fixtures import KAFKA_WARNINGS, pg_store_url, tansu_broker  # noqa: F401

from domain.envelope import Envelope
from ledger.bootstrap import Ledger, bootstrap
from ledger.drivers.demo import seed_jobs
from ledger.drivers.distributed import Cluster, run_until_idle, wait_caught_up
from ledger.settings import Settings
from runtime.clock import SystemClock
from simulator import SimulatorThread

pytestmark = [pytest.mark.postgres, pytest.mark.kafka, KAFKA_WARNINGS, pytest.mark.timeout(180)]

ARGS = ["--lease-ttl", "6", "--tick", "0.3", "--redrive-after", "5", "--partitions", "4"]
CRAWL_PROJECT = ("crawl", "project")
SLOW, FAST = 30.0, 0.1  # seconds between a store's pages
#: a worker's event store pool (eventsourcing's 5, plus up to 10 overflow under load),
#: its read-model connection and its helpers'; measured: 6 to 8 each
MAX_CONNECTIONS_PER_WORKER = 20


@pytest.fixture
def settings(pg_store_url: str, tansu_broker: str, tmp_path: Path) -> Settings:  # noqa: F811
    return Settings.from_env({**LOOPBACK_ENV, "LEDGER_STORE": pg_store_url,
                              "LEDGER_BROKER": f"kafka://{tansu_broker}",
                              "LEDGER_DATA_DIR": str(tmp_path / "dist"),
                              "LEDGER_DEFAULT_CRAWL_DELAY": str(FAST)})


@pytest.fixture
def ledger(settings: Settings) -> Iterator[Ledger]:
    opened = bootstrap(settings)
    try:
        yield opened
    finally:
        opened.close()


def connections_by_process() -> Counter[str]:
    with psycopg.connect(backends.PG_CONNINFO, autocommit=True) as conn:
        rows = conn.execute("SELECT application_name FROM pg_stat_activity "
                            "WHERE application_name LIKE 'crawl-ledger worker-%%'").fetchall()
    return Counter(name.removeprefix("crawl-ledger ") for (name,) in rows)


def holding_a_lease(ledger: Ledger, pids: dict[str, int]) -> str | None:
    """A process (of `pids`) that holds a lease now: in the middle of a crawl."""
    holders = {str(job["worker"]) for job in ledger.read.jobs("leased")}
    return next((name for name, pid in pids.items()
                 if any(f":{pid}:" in holder for holder in holders)), None)


def crawl_delay(ledger: Ledger, seconds: float) -> None:
    now = SystemClock().now()
    for store in ledger.read.stores():
        ledger.app.change_store_policy(store["store_id"], now=now, crawl_delay=seconds)


def force_every_job(ledger: Ledger) -> int:
    """Every scheduled job due now (an operator's "run now"); returns the store's head."""
    now = SystemClock().now()
    for job in ledger.read.jobs("scheduled"):
        ledger.app.force_run(job["job_id"], now)
    return ledger.source.head()


class PeakConnections:
    """Samples `connections_by_process` on a thread while the fleet runs; `peak` holds
    the most each process had open at once (as often as the queries go, no pause)."""

    def __init__(self) -> None:
        self.peak: Counter[str] = Counter()
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, name="pg-connections", daemon=True)

    def sample(self) -> Counter[str]:
        now = connections_by_process()
        for name, count in now.items():
            self.peak[name] = max(self.peak[name], count)
        return now

    def _run(self) -> None:
        while not self._done.wait(0.05):
            self.sample()

    def __enter__(self) -> PeakConnections:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._done.set()
        self._thread.join(10)


def test_workers_join_and_leave_a_running_fleet(ledger: Ledger, settings: Settings) -> None:
    with PeakConnections() as connections:
        joined = scale_out_and_in(ledger, settings)
    peak = connections.peak
    assert set(peak) >= {"worker-0", "worker-1", *joined}, peak
    wait_for(lambda: not set(connections_by_process()) & {"worker-1", *joined},
             "the departed workers' connections closed", 30)
    check("crawl+project workers join, then leave: PostgreSQL connections", {
        "connections_bounded": lambda: None if max(peak.values()) <= MAX_CONNECTIONS_PER_WORKER
        else f"PostgreSQL connections per worker: {dict(peak)}"})


def scale_out_and_in(ledger: Ledger, settings: Settings) -> list[str]:
    """Two crawl+project workers join a fleet of one; the first leaves (SIGTERM), then
    one that joined dies mid-crawl (kill -9); checks the invariants, returns the joined."""
    with SimulatorThread(stores=4, seed=11) as sim, \
            Cluster(settings, workers=[("dispatch",), CRAWL_PROJECT], worker_args=ARGS) as cluster:
        seed_jobs(ledger, sim.urls.locator_url, sim.urls.control_url, SystemClock())
        group = cluster.projector_group
        run_until_idle(ledger, group, SystemClock(), scheduler=False, timeout=90)
        joined = [cluster.add_worker(CRAWL_PROJECT), cluster.add_worker(CRAWL_PROJECT)]
        pids = {name: cluster.processes[name].process.pid for name in joined}  # type: ignore[union-attr]
        wait_for(lambda: set(joined) <= set(connections_by_process()),
                 "the new workers connected", 60)
        # the first worker leaves: its partitions go to the two that joined
        cluster.remove("worker-1", signal.SIGTERM)
        sim.simulator.set_epoch(1)  # the catalogs change: the next crawls record news
        crawl_delay(ledger, SLOW)  # the crawls stay in flight long enough to be cut
        force_every_job(ledger)
        busy = wait_for(lambda: holding_a_lease(ledger, pids), "a joined worker mid-crawl", 60)
        before: list[Envelope] = ledger.source.read(0, 1_000_000)
        cluster.remove(busy, signal.SIGKILL)  # mid-crawl: its lease runs out, the job is redone
        crawl_delay(ledger, FAST)
        run_until_idle(ledger, group, SystemClock(), scheduler=False, timeout=90)
        wait_caught_up(ledger, group, 60)
        states = Counter(job["state"] for job in ledger.read.jobs())
        stored = ledger.source.read(0, 1_000_000)
        expired = [e for e in stored[len(before):] if e.event_type == "CrawlJob.LeaseExpired"]
        assert expired, "the killed worker held no lease: nothing was cut mid-crawl"
        check("crawl+project workers join, others leave (SIGTERM, kill -9) under the relay", {
            "no_loss": lambda: no_loss(before, stored),
            "no_duplicate_effects": lambda: no_duplicate_effects(stored),
            "read_models_equal_rebuild": lambda: rebuild_differences(ledger),
            "jobs_settled": lambda: None if set(states) <= SETTLED else f"states {dict(states)}",
        })
    return joined
