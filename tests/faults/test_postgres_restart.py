"""PostgreSQL restarts under a running `crawl-ledger run` and `crawl-ledger relay`: each
waits for the store to come back (no crash, no lost result), carries on afterwards, and
the invariants hold. The server is a private cluster (`pg_server`), so the shared
PostgreSQL of the other tests is never touched."""

from __future__ import annotations

import os
import signal
import subprocess
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import backends
import psycopg
import pytest
from fleet import CLI, Fleet, fleet, make_slow_fast, wait_for
from invariants import check, jobs_settled, no_duplicate_effects, no_loss, read_models_equal_rebuild
from kafka_fixtures import (
    KAFKA_WARNINGS,
    free_port,
    read_topics,
    require_tansu,
    seed_stores,
    start_tansu,
    stop_process,
    wait_for_port,
)
from pg_server import private_postgres
from psycopg.rows import dict_row

from eventstore.side_tables.schema import RELAY_POSITION as POSITION_TABLE
from streams.topics import PUBLIC_TOPICS

pytestmark = [pytest.mark.timeout(240), pytest.mark.postgres]


def job_rows(box: Fleet) -> dict[str, dict[str, object]]:
    """The job-status read model the runner keeps in PostgreSQL ({} while unreachable),
    read with one query: opening a ledger (`bootstrap`) 20 times a second would run its
    `CREATE … IF NOT EXISTS` statements, which lock the runner's tables while it writes."""
    pg = box.settings().postgres
    try:
        with psycopg.connect(pg.conninfo, autocommit=True, row_factory=dict_row) as conn:
            rows = conn.execute(f"SELECT * FROM {pg.schema}_read.job_status").fetchall()
    except psycopg.Error:  # the server is restarting, or the runner has not made it yet
        return {}
    return {str(row["job_id"]): row for row in rows}


def test_postgres_restart_under_a_running_runner(tmp_path: Path) -> None:
    with private_postgres() as pg, fleet(tmp_path, store_url=pg.url) as box:
        proc = box.start("--stop-deadline", "2")
        try:
            fast = sorted(box.fast_jobs)
            try:
                wait_for(lambda: all(job_rows(box).get(j, {}).get("runs") for j in fast)
                         and all(job_rows(box).get(j, {}).get("state") == "leased"
                                 for j in box.slow_jobs),
                         "fast jobs recorded, slow ones in flight")
            except AssertionError as error:  # say what the runner and its read model did
                proc.kill()
                _, err = proc.communicate(timeout=30)
                seen = {job: (row.get("state"), row.get("runs"), row.get("last_error"))
                        for job, row in job_rows(box).items()}
                raise AssertionError(f"{error}; fast {fast}, slow {sorted(box.slow_jobs)}; "
                                     f"read model {seen}; runner stderr: {err[-3000:]}"
                                     ) from None
            before = box.envelopes()
            pg.ctl("-m", "fast", "restart")  # every connection of the runner is cut
            runs = int(job_rows(box)[fast[0]]["runs"])  # type: ignore[call-overload]
            with box.ledger() as ledger:
                ledger.app.force_run(fast[0], now=datetime.now(UTC))
            wait_for(lambda: int(job_rows(box).get(fast[0], {}).get("runs", 0)) > runs,  # type: ignore[call-overload]
                     "the same runner to crawl and record again after the restart")
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            proc.send_signal(signal.SIGTERM)
            _, err = proc.communicate(timeout=60)
            assert proc.returncode == 0, err
        finally:
            proc.kill()
            proc.communicate()
        make_slow_fast(box)
        box.run_until_idle()
        after = box.envelopes()
        with box.ledger() as ledger:
            check("PostgreSQL restart under the runner", {
                "no_loss": lambda: no_loss(before, after),
                "no_duplicate_effects": lambda: no_duplicate_effects(after),
                "read_models_equal_rebuild": lambda: read_models_equal_rebuild(ledger),
                "jobs_settled": lambda: jobs_settled(ledger),
            })


def relay_position(url: str) -> int:
    """The relay's stored position (0 while the server restarts or before the relay
    made its table), read on a connection of its own: the test's ledger's pool is cut
    by the restart as the relay's is."""
    pg = backends.settings_for(url, Path("/nonexistent")).postgres
    try:
        with psycopg.connect(pg.conninfo, autocommit=True) as conn:
            row = conn.execute(f"SELECT position FROM {pg.schema}_read.{POSITION_TABLE} "
                               "WHERE name = 'kafka'").fetchone()
    except psycopg.Error:
        return 0
    return int(row[0]) if row else 0


@pytest.mark.kafka
@KAFKA_WARNINGS
def test_postgres_restart_under_a_running_relay(tmp_path: Path) -> None:
    """PostgreSQL restarts under `crawl-ledger relay` (its connections, its LISTEN and
    its reader process's all cut): once the server is back the same relay process
    publishes what is recorded next, promptly and without exiting; nothing is lost."""
    binary, port = require_tansu(), free_port()
    servers = [f"127.0.0.1:{port}"]
    broker = start_tansu(binary, port, tmp_path / "tansu.log")
    relay = None
    try:
        with private_postgres() as pg:
            url = f"{pg.url}?schema=relayed"
            with backends.open_ledger(url, tmp_path) as ledger:
                first = seed_stores(ledger.app, 400, changes=4)  # 2,000 events
            wait_for_port(port)
            env = {k: v for k, v in os.environ.items() if not k.startswith("LEDGER_")} | {
                "LEDGER_STORE": url, "LEDGER_BROKER": f"kafka://{servers[0]}",
                "LEDGER_DATA_DIR": str(tmp_path / "data")}
            relay = subprocess.Popen([CLI, "relay", "--quiet", "--batch-size", "200",
                                      "--partitions", "2"], env=env, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True)
            wait_for(lambda: relay_position(url) == first, "the backlog published")
            pg.ctl("-m", "fast", "restart")  # every connection of the relay is cut
            with backends.open_ledger(url, tmp_path) as ledger:
                head = first + seed_stores(ledger.app, 200, changes=4, start=400)
                stored = ledger.source.read(0, 10_000)
            try:
                wait_for(lambda: relay_position(url) == head,
                         "the same relay to publish what was recorded after the restart", 30)
            except AssertionError as error:  # say what the relay did
                relay.kill()
                raise AssertionError(f"{error}; the relay's log: "
                                     f"{relay.communicate(timeout=30)[1][-3000:]}") from None
            assert relay.poll() is None, relay.stderr.read() if relay.stderr else ""
        published = read_topics(servers, PUBLIC_TOPICS, head)
        check("PostgreSQL restart under the relay", {
            "no_loss": lambda: no_loss(stored, [replace(env, ledger_id=None)  # stamped on the wire
                                                for _, _, env in published]),
            "no_duplicate_effects": lambda: no_duplicate_effects(stored),
        })
    finally:
        if relay is not None:
            relay.terminate()
            relay.communicate(timeout=30)
        stop_process(broker)
