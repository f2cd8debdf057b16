"""Sixteen workers race to lease one due job on PostgreSQL: exactly one wins."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import backends
import pytest

from domain.errors import Conflict, InvalidTransition
from ledger.bootstrap import Ledger

pytestmark = pytest.mark.postgres
T0 = datetime(2026, 3, 1, 8, 0, tzinfo=UTC)
WORKERS = 16


@pytest.fixture
def pg_ledger(tmp_path: Path) -> Iterator[Ledger]:
    with backends.store_url("postgres", tmp_path) as url, \
            backends.open_ledger(url, tmp_path) as ledger:
        yield ledger


def test_exactly_one_of_sixteen_racing_leases_wins(pg_ledger: Ledger) -> None:
    app = pg_ledger.app
    job_id = app.schedule_job(kind="feed", url="https://feeds.example/rss", now=T0, every=3600)
    barrier = threading.Barrier(WORKERS)
    won: list[str] = []
    refused: list[Exception] = []
    unexpected: list[BaseException] = []

    def worker(n: int) -> None:
        try:
            barrier.wait(timeout=30)
            won.append(app.lease(job_id, f"worker-{n}", 300, T0).lease_id)
        except (Conflict, InvalidTransition) as error:
            refused.append(error)
        except BaseException as error:  # noqa: BLE001 - reported by the assertion below
            unexpected.append(error)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(WORKERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)

    assert unexpected == []
    assert len(won) == 1 and len(refused) == WORKERS - 1
    assert any(isinstance(e, Conflict) for e in refused), "no transaction actually raced"
    for error in refused:
        if isinstance(error, Conflict):
            assert "concurrent command changed the same aggregate first" in str(error)
        else:
            assert "it is leased" in str(error)
    history = [type(e).__name__ for e in app.history(job_id)]
    assert history == ["Scheduled", "Leased"]
    job = app.get_job(job_id)
    assert (job.state, job.lease_id, job.attempt) == ("leased", won[0], 1)
