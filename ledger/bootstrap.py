"""The composition root: everything is built here from Settings, nothing at import.

Drivers get what they need from here (`bootstrap` for a ledger, `components`
for a driver process that opens its own), and never import this module.
"""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import AbstractContextManager, asynccontextmanager, contextmanager, nullcontext
from functools import partial
from typing import TYPE_CHECKING, Any

from domain.application import CrawlLedger, LedgerOptions
from eventstore import Backend, SQLiteBackend
from eventstore.admin import connection_failed
from eventstore.pack_index import open_pack_index
from eventstore.side_tables import create_side_tables
from ledger.crawlers import crawler_for, runner_crawler
from ledger.host.redact import redact_url
from ledger.settings import ConfigError, Settings
from projections.db import Database, PostgresDatabase, SQLiteDatabase
from projections.source import NotificationLogSource
from runtime.components import Components
from runtime.ledger import Ledger
from streams.wakeup import PollWakeup, Wakeup

if TYPE_CHECKING:
    from workers.alert_delivery.notify import Notifier

__all__ = ["Ledger", "bootstrap", "components", "crawler_for", "event_source", "notifier_for",
           "runner_crawler", "wakeup_for"]


def backend_for(settings: Settings) -> Backend:
    """The event-store adapter the settings choose."""
    if settings.is_postgres:
        from eventstore.postgres import PostgresBackend  # psycopg only where it is used

        return PostgresBackend(settings.postgres)
    return SQLiteBackend(settings.sqlite_path)


def ledger_options(settings: Settings) -> LedgerOptions:
    return LedgerOptions(catalog_interval=settings.catalog_interval,
                         default_crawl_delay=settings.default_crawl_delay)


def bootstrap(settings: Settings) -> Ledger:
    """Build the ledger for these settings (connects to the databases)."""
    with _creating_tables(settings):
        try:
            if settings.is_postgres:
                db: Database = _postgres_read_db(settings)
            else:
                settings.sqlite_path.parent.mkdir(parents=True, exist_ok=True)
                db = SQLiteDatabase(settings.sqlite_path.with_name("readmodels.sqlite"))
            backend = backend_for(settings)
            app = CrawlLedger(backend, ledger_options(settings))
        except OSError as error:
            raise ConfigError(f"cannot open the event store {redact_url(settings.store)}: "
                              f"{error}") from error
        create_side_tables(db)  # one migration step: every side table, in one transaction
        ledger = Ledger(app, db, backend, settings.data_dir, open_pack_index,
                        settings.checkpoint_every)
        ledger.create_tables()
        return ledger


@contextmanager
def event_source(settings: Settings) -> Iterator[NotificationLogSource]:
    """The notification log alone, for a process that only reads it (the relay's
    reader process): the event store's application, no read models."""
    with _creating_tables(settings):  # unreachable: one line now, not the pool's 30 s
        backend = backend_for(settings)
        app = CrawlLedger(backend, ledger_options(settings))
    try:
        yield NotificationLogSource(app.recorder, backend)
    finally:
        app.close()


def components(settings: Settings) -> Components:
    """Factories for a driver process: it opens the ledger and crawler when it runs."""
    servers = tuple(settings.broker_servers) if settings.broker else ()
    return Components(open_ledger=partial(bootstrap, settings),
                      open_crawler=partial(crawler_for, settings),
                      data_dir=settings.data_dir, broker_servers=servers,
                      deployment=settings.deployment,
                      open_notifier=partial(notifier_for, settings))


def _postgres_read_db(settings: Settings) -> Database:
    pg = settings.postgres
    try:
        return PostgresDatabase(pg.conninfo, schema=f"{pg.schema}_read")
    except Exception as error:
        if not connection_failed(error):
            raise
        raise _unreachable(settings, error) from error


def _creating_tables(settings: Settings) -> AbstractContextManager[None]:
    """Held while a process creates its tables (one creator at a time on PostgreSQL)."""
    return _postgres_schema(settings) if settings.is_postgres else nullcontext()


@contextmanager
def _postgres_schema(settings: Settings) -> Iterator[None]:
    """Create the event store's schema and hold the schema lock while the stores create
    their tables (a clear error if PostgreSQL is unreachable)."""
    from eventstore.locks import postgres_schema_lock

    pg = settings.postgres
    try:
        with postgres_schema_lock(pg.conninfo, pg.dbname, pg.schema):
            yield
    except Exception as error:
        if not connection_failed(error):
            raise
        raise _unreachable(settings, error) from error


def _unreachable(settings: Settings, error: Exception) -> ConfigError:
    pg = settings.postgres
    return ConfigError(f"cannot connect to PostgreSQL at {pg.host}:{pg.port}/{pg.dbname}:"
                       f" {str(error).strip().splitlines()[0]}")


def wakeup_for(recorder: Any, conninfo: str | None,
               stop: threading.Event | None = None) -> Wakeup:
    """What the relay waits on when idle: LISTEN for a PostgreSQL recorder (the channel
    it notifies on every insert), polling otherwise."""
    from eventstore.listen import listener_for  # psycopg only where it is used

    return listener_for(recorder, conninfo) or PollWakeup(stop)


@asynccontextmanager
async def notifier_for(settings: Settings) -> AsyncIterator[Notifier]:
    """The alert sender: its own HTTP client behind the same address guard as the crawler."""
    from workers.alert_delivery.notify import Notifier
    from workers.fetching.addresses import AddressGuard
    from workers.fetching.http import build_client

    guard = AddressGuard(settings.allow_networks)
    async with build_client(user_agent=settings.user_agent, guard=guard,
                            max_connections=16) as client:
        yield Notifier(client, guard, user_agent=settings.user_agent)
