"""Event-store backends for contract tests: a real SQLite file, or a throwaway
PostgreSQL schema on 127.0.0.1:5432 (dropped afterwards, with its `_read` twin).

When PostgreSQL is unreachable the postgres variant is skipped with the reason —
unless `CI=true`, where a missing database is a failure, not a skip.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from ledger.bootstrap import Ledger, bootstrap
from ledger.settings import Settings

#: the tests' servers listen on loopback, which the SSRF guard refuses unless allowed;
#: set for the whole session (CLI subprocesses inherit it) and in every test's settings
LOOPBACK_ENV = {"LEDGER_ALLOW_NETWORKS": "127.0.0.0/8,::1/128"}
os.environ.update(LOOPBACK_ENV)

PG_CONNINFO = "host=127.0.0.1 port=5432 dbname=test user=postgres connect_timeout=3"
PG_URL = "postgresql://postgres@127.0.0.1:5432/test"
BACKENDS = ("sqlite", "postgres")


def postgres_unavailable() -> str | None:
    """None if PostgreSQL answers, else why not."""
    import psycopg

    try:
        with psycopg.connect(PG_CONNINFO) as conn:
            conn.execute("SELECT 1")
    except psycopg.OperationalError as error:
        return f"PostgreSQL at 127.0.0.1:5432/test is unreachable: {str(error).strip()}"
    return None


def require_postgres() -> None:
    reason = postgres_unavailable()
    if reason is None:
        return
    if os.environ.get("CI") == "true":
        pytest.fail(f"{reason} (CI=true: PostgreSQL is required)")
    pytest.skip(reason)


def drop_schema(schema: str) -> None:
    import psycopg

    with psycopg.connect(PG_CONNINFO, autocommit=True) as conn:
        for name in (schema, f"{schema}_read"):
            conn.execute(f"DROP SCHEMA IF EXISTS {name} CASCADE")


@contextmanager
def store_url(backend: str, tmp_path: Path) -> Iterator[str]:
    """A fresh LEDGER_STORE value for the backend, cleaned up afterwards."""
    if backend == "sqlite":
        yield f"sqlite:///{tmp_path / 'events' / 'ledger.sqlite'}"
        return
    require_postgres()
    schema = f"t_{uuid.uuid4().hex[:8]}"
    try:
        yield f"{PG_URL}?schema={schema}"
    finally:
        drop_schema(schema)


def settings_for(url: str, tmp_path: Path, **env: str) -> Settings:
    """Settings for the store at `url`, data under `tmp_path`, plus any `LEDGER_*` `env`."""
    return Settings.from_env({**LOOPBACK_ENV, "LEDGER_DATA_DIR": str(tmp_path / "data"),
                              "LEDGER_STORE": url, **env})


@contextmanager
def open_ledger(url: str, tmp_path: Path) -> Iterator[Ledger]:
    ledger = bootstrap(settings_for(url, tmp_path))
    try:
        yield ledger
    finally:
        ledger.close()
