"""The composition root: everything is built here from Settings, nothing at import."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from domain.application import CrawlLedger
from ledger.settings import ConfigError, Settings
from projections import Projection, read_models
from projections.db import Database, PostgresDatabase, SQLiteDatabase
from projections.queries import ReadModel
from projections.runner import ProjectionRunner
from projections.source import NotificationLogSource

if TYPE_CHECKING:
    from workers.crawler import Crawler


@dataclass
class Ledger:
    """The wired system: command side, read side and their settings."""

    settings: Settings
    app: CrawlLedger
    db: Database
    source: NotificationLogSource = field(init=False)
    read: ReadModel = field(init=False)
    _runner: ProjectionRunner | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        self.source = NotificationLogSource(self.app.recorder)
        self.read = ReadModel(self.db)

    def projections(self, prefix: str = "") -> Sequence[Projection]:
        return read_models(prefix)

    def runner(self, batch_size: int = 1000) -> ProjectionRunner:
        return ProjectionRunner(self.source, self.db, self.projections(), batch_size)

    def catch_up(self) -> int:
        """Bring the read models up to date with everything recorded so far."""
        if self._runner is None:  # creating one creates the tables: do it once
            self._runner = self.runner()
        return self._runner.catch_up()

    def close(self) -> None:
        self.db.close()
        self.app.close()


def app_env(settings: Settings) -> dict[str, str]:
    env = {"CATALOG_INTERVAL": str(settings.catalog_interval)}
    if settings.default_crawl_delay is not None:
        env["DEFAULT_CRAWL_DELAY"] = str(settings.default_crawl_delay)
    if settings.is_postgres:
        pg = settings.postgres
        return env | {
            "PERSISTENCE_MODULE": "eventsourcing.postgres", "POSTGRES_DBNAME": pg.dbname,
            "POSTGRES_HOST": pg.host, "POSTGRES_PORT": str(pg.port), "POSTGRES_USER": pg.user,
            "POSTGRES_PASSWORD": pg.password, "POSTGRES_SCHEMA": pg.schema,
            "POSTGRES_POOL_SIZE": "8", "POSTGRES_MAX_OVERFLOW": "16",
        }
    return env | {"PERSISTENCE_MODULE": "eventsourcing.sqlite",
                  "SQLITE_DBNAME": str(settings.sqlite_path), "SQLITE_LOCK_TIMEOUT": "30"}


def bootstrap(settings: Settings) -> Ledger:
    """Build the ledger for these settings (connects to the databases)."""
    try:
        if settings.is_postgres:
            db: Database = _postgres_read_db(settings)
        else:
            settings.sqlite_path.parent.mkdir(parents=True, exist_ok=True)
            db = SQLiteDatabase(settings.sqlite_path.with_name("readmodels.sqlite"))
        app = CrawlLedger(env=app_env(settings))
    except OSError as error:
        raise ConfigError(f"cannot open the event store {settings.store}: {error}") from error
    return Ledger(settings, app, db)


def _postgres_read_db(settings: Settings) -> Database:
    import psycopg

    pg = settings.postgres
    try:
        with psycopg.connect(pg.conninfo, autocommit=True) as conn:
            conn.execute(f"CREATE SCHEMA IF NOT EXISTS {pg.schema}")
        return PostgresDatabase(pg.conninfo, schema=f"{pg.schema}_read")
    except psycopg.OperationalError as error:
        raise ConfigError(f"cannot connect to PostgreSQL at {pg.host}:{pg.port}/{pg.dbname}:"
                          f" {str(error).strip().splitlines()[0]}") from error


@asynccontextmanager
async def crawler_for(settings: Settings) -> AsyncIterator[Crawler]:
    """A Crawler with a fast HTTP client and the data dir's raw archive; closes both."""
    from workers import adapters
    from workers.crawler import build_crawler
    from workers.http import build_client

    async with build_client(user_agent=settings.user_agent) as client:
        crawler = build_crawler(client, settings.data_dir, adapters)
        try:
            yield crawler
        finally:
            crawler.close()
