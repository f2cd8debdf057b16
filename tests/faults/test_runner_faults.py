"""Faults of the embedded runner process: kill -9, SIGTERM, SIGSTOP beyond the lease
TTL, and sixteen concurrent leasers. Each case is bounded in time and checked against
every invariant (tests/faults/invariants.py)."""

from __future__ import annotations

import contextlib
import os
import signal
import sqlite3
import subprocess
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import backends
import pytest
from fleet import Fleet, fleet, make_slow_fast, wait_for
from invariants import check, jobs_settled, no_duplicate_effects, no_loss, read_models_equal_rebuild

from domain.errors import Conflict, InvalidTransition
from runtime.scheduler import Scheduler

pytestmark = pytest.mark.timeout(240)


def settle_and_check(case: str, box: Fleet, before: list) -> None:  # type: ignore[type-arg]
    make_slow_fast(box)
    box.run_until_idle()
    after = box.envelopes()
    with box.ledger() as ledger:
        check(case, {
            "no_loss": lambda: no_loss(before, after),
            "no_duplicate_effects": lambda: no_duplicate_effects(after),
            "read_models_equal_rebuild": lambda: read_models_equal_rebuild(ledger),
            "jobs_settled": lambda: jobs_settled(ledger),
        })


def test_runner_kill9_mid_crawl(tmp_path: Path) -> None:
    with fleet(tmp_path) as box:
        proc = box.start()
        try:
            wait_for(lambda: proc.poll() is not None or box.slow_in_flight(), "slow crawls in flight")
            proc.send_signal(signal.SIGKILL)
            proc.communicate(timeout=10)
        finally:
            proc.kill()
            proc.communicate()
        settle_and_check("runner kill -9 mid-crawl", box, box.envelopes())


def test_runner_sigterm_mid_crawl(tmp_path: Path) -> None:
    with fleet(tmp_path) as box:
        proc = box.start("--stop-deadline", "1")
        try:
            wait_for(lambda: proc.poll() is not None or box.slow_in_flight(), "slow crawls in flight")
            proc.send_signal(signal.SIGTERM)
            _, errors = proc.communicate(timeout=30)
            assert proc.returncode == 0, errors
        finally:
            proc.kill()
            proc.communicate()
        before = box.envelopes()
        released = {e.stream_id for e in before if e.event_type == "CrawlJob.LeaseReleased"}
        assert released == box.slow_jobs
        settle_and_check("runner SIGTERM mid-crawl", box, before)


def freeze_between_writes(proc: subprocess.Popen[str], box: Fleet) -> None:
    """SIGSTOP the runner at a moment it holds no SQLite write lock: a process frozen
    inside a write transaction would lock the store for everyone (that is SQLite, not
    the case under test), so thaw and try again until both files are free."""
    for _ in range(200):
        proc.send_signal(signal.SIGSTOP)
        _wait_stopped(proc.pid)  # the signal is delivered asynchronously
        if all(_writable(box.data_dir / name) for name in ("ledger.sqlite", "readmodels.sqlite")):
            return
        proc.send_signal(signal.SIGCONT)
        time.sleep(0.01)
    raise AssertionError("the runner never paused between writes")


def _wait_stopped(pid: int) -> None:
    """Until every thread of `pid` is stopped (state T in /proc), at most 5 s."""
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        states = [Path(f"/proc/{pid}/task/{t}/stat").read_text().rsplit(")", 1)[1].split()[0]
                  for t in os.listdir(f"/proc/{pid}/task")]
        if all(state in ("T", "t") for state in states):
            return
        time.sleep(0.005)
    raise AssertionError(f"process {pid} did not stop")


def _writable(path: Path) -> bool:
    with contextlib.closing(sqlite3.connect(path, timeout=0.5, isolation_level=None)) as conn:
        try:
            conn.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError:
            return False
        conn.execute("ROLLBACK")
        return True


def test_runner_sigstop_beyond_the_lease_ttl(tmp_path: Path) -> None:
    """A frozen runner's leases expire and are reaped; when it wakes up its late results
    are refused (the lease is gone), so nothing is recorded twice."""
    with fleet(tmp_path, slow_delay=3.0) as box:
        proc = box.start("--lease-ttl", "2", "--stop-deadline", "30")
        try:
            wait_for(lambda: proc.poll() is not None or box.slow_in_flight(), "slow crawls in flight")
            freeze_between_writes(proc, box)
            with box.ledger() as ledger:
                reaped: set[str] = set()

                def reap() -> bool:
                    now = datetime.now(UTC) + timedelta(seconds=1)
                    reaped.update(str(j) for j in Scheduler(ledger).reap(now))
                    ledger.catch_up()
                    return box.slow_jobs <= reaped

                wait_for(reap, "the frozen runner's leases to expire", timeout=30)
            proc.send_signal(signal.SIGCONT)
            proc.send_signal(signal.SIGTERM)
            proc.communicate(timeout=60)
        finally:
            proc.kill()
            proc.communicate()
        before = box.envelopes()
        expired = {e.stream_id for e in before if e.event_type == "CrawlJob.LeaseExpired"}
        assert box.slow_jobs <= expired
        settle_and_check("runner SIGSTOP beyond lease TTL", box, before)


@pytest.mark.postgres
def test_sixteen_concurrent_leasers(tmp_path: Path) -> None:
    """Sixteen threads lease the same twenty due jobs on PostgreSQL: each job exactly once."""
    t0 = datetime(2026, 3, 1, 8, 0, tzinfo=UTC)
    with backends.store_url("postgres", tmp_path) as url, \
            backends.open_ledger(url, tmp_path) as ledger:
        jobs = [ledger.app.schedule_job(kind="product_page", url=f"https://s.example/p/{i}",
                                        now=t0, every=3600) for i in range(20)]
        before = ledger.source.read(0, 10_000)
        barrier, won, unexpected = threading.Barrier(16), [], []

        def leaser(n: int) -> None:
            barrier.wait(timeout=30)
            for job in jobs:
                try:
                    won.append(ledger.app.lease(job, f"worker-{n}", 300, t0).job_id)
                except (Conflict, InvalidTransition):
                    continue
                except BaseException as error:  # noqa: BLE001 - reported below
                    unexpected.append(error)

        threads = [threading.Thread(target=leaser, args=(n,)) for n in range(16)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
        assert not unexpected
        after = ledger.source.read(0, 10_000)
        leased = [e.stream_id for e in after if e.event_type == "CrawlJob.Leased"]
        check("16 concurrent leasers (PostgreSQL)", {
            "no_loss": lambda: no_loss(before, after),
            "no_duplicate_effects": lambda: (None if sorted(leased) == sorted(map(str, jobs))
                                             and sorted(won) == sorted(leased)
                                             else f"{len(leased)} leases for {len(jobs)} jobs"),
            "read_models_equal_rebuild": lambda: read_models_equal_rebuild(ledger),
        })
