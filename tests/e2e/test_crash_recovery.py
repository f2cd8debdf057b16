"""A `crawl-ledger run` killed mid-crawl (SIGKILL) loses nothing and duplicates nothing.

Real processes, real signals, real HTTP: four catalog jobs against the simulator,
two of them on stores with a long crawl delay, so their crawls are still in flight
(leased) when the fast ones have been recorded (`tests/fleet.py`). The runner is
killed right there. The next `crawl-ledger run --until-idle` expires the orphaned
leases (`LeaseExpired`), retries those jobs and records each result once; the read
models equal a rebuild (`crawl-ledger projections rebuild --verify`). The other
faults of the runner are in tests/faults/.
"""

from __future__ import annotations

import signal
import subprocess
from collections import Counter, defaultdict
from collections.abc import Iterator
from pathlib import Path

import pytest
from fleet import CLI, Fleet, fleet, make_slow_fast, wait_for

from domain.envelope import Envelope
from domain.sightings import expand


@pytest.fixture
def setup(tmp_path: Path) -> Iterator[Fleet]:
    with fleet(tmp_path) as box:
        yield box


def _last_events(envelopes: list[Envelope]) -> dict[str, Envelope]:
    last = {}
    for env in envelopes:
        if env.stream_type == "CrawlJob":
            last[env.stream_id] = env
    return last


def test_sigkill_mid_crawl_then_restart_recovers_without_duplicates(setup: Fleet) -> None:
    proc = setup.start()
    try:
        wait_for(lambda: proc.poll() is not None or setup.slow_in_flight(), "slow crawls in flight")
        assert proc.poll() is None, "the runner exited on its own"
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=10)
        assert proc.returncode == -signal.SIGKILL
    finally:
        proc.kill()
        proc.communicate()

    before = setup.envelopes()
    orphans = {job for job, e in _last_events(before).items() if e.event_type == "CrawlJob.Leased"}
    assert orphans == setup.slow_jobs
    leases = {e.stream_id: e.payload["lease_id"] for e in before
              if e.event_type == "CrawlJob.Leased"}
    assert not [e for e in expand(before) if e.event_type in ("Product.Observed", "Product.Sighted")
                and e.payload["job_id"] in orphans], "an unfinished crawl recorded products"

    make_slow_fast(setup)  # the operator makes the slow stores fast before restarting
    setup.run_until_idle()

    after = setup.envelopes()
    assert after[: len(before)] == before  # history is only ever appended to
    _assert_orphans_expired_and_retried(after[len(before):], orphans, leases)
    _assert_no_duplicate_product_events(after, setup)

    verify = subprocess.run([CLI, "projections", "rebuild", "--verify"], env=setup.env(),
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


def _assert_no_duplicate_product_events(envelopes: list[Envelope], setup: Fleet) -> None:
    observed = Counter((e.stream_id, e.payload["job_id"], e.payload["attempt"])
                       for e in expand(envelopes)
                       if e.event_type in ("Product.Observed", "Product.Sighted"))
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


def test_a_second_signal_exits_at_once(setup: Fleet) -> None:
    proc = setup.start("--stop-deadline", "600")
    try:
        wait_for(lambda: proc.poll() is not None or setup.slow_in_flight(), "slow crawls in flight")
        assert proc.stderr is not None
        proc.send_signal(signal.SIGTERM)
        # the first signal was handled (log lines of finished crawls may come first)
        assert any("stopping" in line for line in iter(proc.stderr.readline, ""))
        proc.send_signal(signal.SIGTERM)
        _, errors = proc.communicate(timeout=20)
        assert proc.returncode == 130 and "second signal" in errors
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
