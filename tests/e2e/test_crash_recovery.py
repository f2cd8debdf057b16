"""A `crawl-ledger run` killed mid-crawl (SIGKILL) loses nothing and duplicates nothing.

Real processes, real signals, real HTTP: four catalog jobs against the simulator,
two of them on stores with a long crawl delay, so their crawls are still in flight
(leased) when the fast ones have been recorded. The runner is killed right there.
The next `crawl-ledger run --until-idle` expires the orphaned leases
(`LeaseExpired`), retries those jobs and records each result once; the read
models equal a rebuild (`crawl-ledger projections rebuild --verify`).
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from domain.crawl_job import RetryPolicy
from domain.envelope import Envelope
from ledger.bootstrap import Ledger, bootstrap
from ledger.demo_report import all_envelopes
from ledger.settings import Settings
from simulator import SimulatorThread

SLOW = ("store-1", "store-3")  # shopify and jsonld: crawls wait out a long crawl delay
SLOW_DELAY = 60.0  # seconds the slow crawls stay in flight (far longer than the test needs)
#: retries due at once, so `--until-idle` runs them instead of stopping before they are due
NO_BACKOFF = RetryPolicy(max_attempts=3, backoff_base=0.0, backoff_cap=0.0)


@dataclass
class Setup:
    data_dir: Path
    sim: SimulatorThread
    jobs: dict[str, str]  # store key -> catalog job id
    stores: dict[str, str]  # store key -> store id

    @property
    def slow_jobs(self) -> set[str]:
        return {self.jobs[k] for k in SLOW}

    @property
    def fast_jobs(self) -> set[str]:
        return set(self.jobs.values()) - self.slow_jobs

    def ledger(self) -> Ledger:
        return bootstrap(Settings.from_env({"LEDGER_DATA_DIR": str(self.data_dir)}))

    def envelopes(self) -> list[Envelope]:
        ledger = self.ledger()
        try:
            return list(all_envelopes(ledger))
        finally:
            ledger.close()


@pytest.fixture
def setup(tmp_path: Path) -> Iterator[Setup]:
    """Four stores registered and their catalogs scheduled (no dispensary: no entry point)."""
    data_dir = tmp_path / "data"
    with SimulatorThread(stores=5, seed=5) as sim:
        ledger = bootstrap(Settings.from_env({"LEDGER_DATA_DIR": str(data_dir)}))
        now = datetime.now(UTC)
        jobs, stores = {}, {}
        try:
            for served in sim.urls.stores:
                if served.platform == "dispensary":
                    continue
                stores[served.key] = str(ledger.app.register_store(
                    name=served.spec.name, base_url=served.base_url, platform=served.platform,
                    now=now, crawl_delay=SLOW_DELAY if served.key in SLOW else 0.0))
                jobs[served.key] = str(ledger.app.schedule_job(
                    kind="catalog", url=served.entry_url, store_id=stores[served.key],
                    every=3600, now=now, retry_policy=NO_BACKOFF))
        finally:
            ledger.close()
        yield Setup(data_dir, sim, jobs, stores)


def _job_rows(data_dir: Path) -> dict[str, dict[str, Any]]:
    """The job-status read model as the running process left it (read-only connection)."""
    path = data_dir / "readmodels.sqlite"
    if not path.exists():
        return {}
    try:
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5) as conn:
            conn.row_factory = sqlite3.Row
            rows = conn.execute("SELECT job_id, state, last_status FROM job_status").fetchall()
    except sqlite3.OperationalError:  # not created yet
        return {}
    return {r["job_id"]: dict(r) for r in rows}


def _in_flight_and_some_recorded(setup: Setup) -> bool:
    rows = _job_rows(setup.data_dir)
    return (all(rows.get(j, {}).get("state") == "leased" for j in setup.slow_jobs)
            and all(rows.get(j, {}).get("last_status") == "succeeded" for j in setup.fast_jobs))


def _last_events(envelopes: list[Envelope]) -> dict[str, Envelope]:
    last = {}
    for env in envelopes:
        if env.stream_type == "CrawlJob":
            last[env.stream_id] = env
    return last


def _kill_mid_crawl(setup: Setup, binary: str, env: dict[str, str],
                    wait_for: Callable[..., Any]) -> None:
    log = (setup.data_dir.parent / "run-1.log").open("w")
    proc = subprocess.Popen([binary, "run", "--concurrency", "4"], env=env, stdout=log,
                            stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    try:
        wait_for(lambda: proc.poll() is not None or _in_flight_and_some_recorded(setup),
                 "slow crawls leased and fast ones recorded", timeout=45)
        assert proc.poll() is None, "the runner exited on its own"
        os.kill(proc.pid, signal.SIGKILL)
        assert proc.wait(timeout=10) == -signal.SIGKILL
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
        log.close()


def test_sigkill_mid_crawl_then_restart_recovers_without_duplicates(
        setup: Setup, crawl_ledger_bin: str, cli_env: Callable[..., dict[str, str]],
        wait_for: Callable[..., Any]) -> None:
    env = cli_env(setup.data_dir)
    _kill_mid_crawl(setup, crawl_ledger_bin, env, wait_for)

    before = setup.envelopes()
    orphans = {job for job, e in _last_events(before).items() if e.event_type == "CrawlJob.Leased"}
    assert orphans == setup.slow_jobs
    leases = {e.stream_id: e.payload["lease_id"] for e in before
              if e.event_type == "CrawlJob.Leased"}
    assert not [e for e in before if e.event_type == "Product.Observed"
                and e.payload["job_id"] in orphans], "an unfinished crawl recorded products"

    ledger = setup.ledger()  # the operator makes the slow stores fast before restarting
    try:
        for key in SLOW:
            ledger.app.change_store_policy(setup.stores[key], now=datetime.now(UTC), crawl_delay=0.0)
    finally:
        ledger.close()
    rerun = subprocess.run([crawl_ledger_bin, "run", "--until-idle"], env=env, timeout=90,
                           capture_output=True, text=True, stdin=subprocess.DEVNULL, check=False)
    assert rerun.returncode == 0, rerun.stdout + rerun.stderr

    after = setup.envelopes()
    assert after[: len(before)] == before  # history is only ever appended to
    _assert_orphans_expired_and_retried(after[len(before):], orphans, leases)
    _assert_no_duplicate_product_events(after, setup)

    verify = subprocess.run([crawl_ledger_bin, "projections", "rebuild", "--verify"], env=env,
                            timeout=60, capture_output=True, text=True, check=False)
    assert verify.returncode == 0, verify.stdout + verify.stderr
    assert "verified" in verify.stdout


def _assert_orphans_expired_and_retried(new: list[Envelope], orphans: set[str],
                                        leases: dict[str, str]) -> None:
    by_job: dict[str, list[Envelope]] = defaultdict(list)
    for env in new:
        if env.stream_type == "CrawlJob":
            by_job[env.stream_id].append(env)
    assert set(by_job) == orphans, "only the orphaned jobs had anything to do"
    for job in orphans:
        events = by_job[job]
        kinds = [e.event_type.removeprefix("CrawlJob.") for e in events]
        assert kinds[0] == "LeaseExpired" and events[0].payload["lease_id"] == leases[job]
        assert events[0].payload["attempt"] == 1
        assert kinds.count("Succeeded") == 1 and "Failed" not in kinds, kinds
        succeeded = next(e for e in events if e.event_type == "CrawlJob.Succeeded")
        assert succeeded.payload["attempt"] == 2


def _assert_no_duplicate_product_events(envelopes: list[Envelope], setup: Setup) -> None:
    observed = Counter((e.stream_id, e.payload["job_id"], e.payload["attempt"])
                       for e in envelopes if e.event_type == "Product.Observed")
    assert set(observed.values()) == {1}, [k for k, n in observed.items() if n > 1]
    discovered = Counter((e.payload["store_id"], e.payload["provider_product_id"])
                         for e in envelopes if e.event_type == "Product.Discovered")
    assert set(discovered.values()) == {1}
    truth = setup.sim.simulator.truth(0)["stores"]
    key_of = {v: k for k, v in setup.stores.items()}
    found: dict[str, set[str]] = defaultdict(set)
    for store_id, provider_id in discovered:
        found[key_of[store_id]].add(provider_id)
    assert found == {k: set(truth[k]["products"]) for k in setup.stores}
    per_job = Counter(job for _, job, _ in observed)
    assert per_job == {setup.jobs[k]: len(truth[k]["products"]) for k in setup.stores}


def _start_mid_crawl(setup: Setup, binary: str, env: dict[str, str],
                     wait_for: Callable[..., Any], *args: str) -> subprocess.Popen[str]:
    proc = subprocess.Popen([binary, "run", "--concurrency", "4", *args], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            stdin=subprocess.DEVNULL)
    wait_for(lambda: proc.poll() is not None or _in_flight_and_some_recorded(setup),
             "slow crawls leased and fast ones recorded", timeout=45)
    assert proc.poll() is None, "the runner exited on its own"
    return proc


def test_sigterm_releases_crawls_in_flight_after_the_deadline_and_exits(
        setup: Setup, crawl_ledger_bin: str, cli_env: Callable[..., dict[str, str]],
        wait_for: Callable[..., Any]) -> None:
    proc = _start_mid_crawl(setup, crawl_ledger_bin, cli_env(setup.data_dir), wait_for,
                            "--stop-deadline", "1")
    try:
        proc.send_signal(signal.SIGTERM)
        _, errors = proc.communicate(timeout=20)
        assert proc.returncode == 0, errors
        assert "stopping" in errors
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    envelopes = setup.envelopes()
    last = _last_events(envelopes)
    assert {j for j, e in last.items() if e.event_type == "CrawlJob.LeaseReleased"} == setup.slow_jobs
    assert not [e for e in envelopes if e.event_type == "CrawlJob.LeaseExpired"]
    ledger = setup.ledger()
    try:  # the read models were caught up before exiting
        rows = {r["job_id"]: r for r in ledger.read.jobs()}
        assert {j: rows[j]["state"] for j in setup.slow_jobs} == dict.fromkeys(setup.slow_jobs,
                                                                                "scheduled")
        assert ledger.runner().catch_up() == 0
    finally:
        ledger.close()


def test_a_second_signal_exits_at_once(
        setup: Setup, crawl_ledger_bin: str, cli_env: Callable[..., dict[str, str]],
        wait_for: Callable[..., Any]) -> None:
    proc = _start_mid_crawl(setup, crawl_ledger_bin, cli_env(setup.data_dir), wait_for,
                            "--stop-deadline", "600")
    try:
        assert proc.stderr is not None
        proc.send_signal(signal.SIGTERM)
        assert "stopping" in proc.stderr.readline()  # the first signal was handled
        proc.send_signal(signal.SIGTERM)
        _, errors = proc.communicate(timeout=20)
        assert proc.returncode == 130 and "second signal" in errors
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
