"""Settings, read once from the environment into a frozen object.

    LEDGER_DATA_DIR   where embedded data lives (default ./.ledger/)
    LEDGER_STORE      event store: empty/unset = SQLite file <data dir>/ledger.sqlite,
                      sqlite:///path/to/file.sqlite, or
                      postgresql://user[:password]@host[:port]/dbname[?schema=name]
    LEDGER_BROKER     kafka://host:port[,host:port] for the distributed path (optional)
    LEDGER_DEPLOYMENT a deployment id (lowercase letters, digits, '-'; up to 32) that
                      namespaces Kafka topics and consumer groups, so deployments can
                      share a broker (default: none, topics `ledger.<name>.v1`)
    LEDGER_USER_AGENT the crawler's honest User-Agent (with a contact URL)
    LEDGER_CATALOG_INTERVAL  seconds between catalog crawls of chained jobs (default 14400)
    LEDGER_DEFAULT_CRAWL_DELAY  crawl delay (s) for stores found by discovery (default 1)
    LEDGER_CHECKPOINT_EVERY  events between read-model checkpoints the projector takes
                      (default 200000; 0: none)

Bad values fail fast with a ConfigError naming the variable; there is no
silent fallback to an in-memory store.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import parse_qs, unquote, urlsplit

from ledger.host.redact import redact_url

if TYPE_CHECKING:  # imported where used: the crawl process unpickles its Settings without
    from eventstore.target import PostgresTarget  # loading the event store's package

DEFAULT_USER_AGENT = "crawl-ledger/0.1 (+https://github.com/crawl-ledger/crawl-ledger)"


class ConfigError(Exception):
    """Invalid configuration: the message names the variable and the problem."""


@dataclass(frozen=True)
class Settings:
    data_dir: Path
    store: str
    broker: str | None = None
    user_agent: str = DEFAULT_USER_AGENT
    catalog_interval: int = 4 * 3600
    default_crawl_delay: float | None = None
    deployment: str = ""
    #: networks the SSRF guard lets requests reach (LEDGER_ALLOW_NETWORKS, CIDRs)
    allow_networks: tuple[str, ...] = ()
    #: the projector takes a read-model checkpoint every so many events (0: never)
    checkpoint_every: int = 200_000

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        env = os.environ if env is None else env
        data_dir = Path(env.get("LEDGER_DATA_DIR") or "./.ledger").expanduser()
        settings = cls(
            data_dir=data_dir,
            store=env.get("LEDGER_STORE") or f"sqlite:///{(data_dir / 'ledger.sqlite').resolve()}",
            broker=env.get("LEDGER_BROKER") or None,
            user_agent=env.get("LEDGER_USER_AGENT") or DEFAULT_USER_AGENT,
            catalog_interval=_int(env, "LEDGER_CATALOG_INTERVAL", 4 * 3600, 60, 90 * 86400),
            default_crawl_delay=_delay(env.get("LEDGER_DEFAULT_CRAWL_DELAY")),
            deployment=_deployment(env.get("LEDGER_DEPLOYMENT") or ""),
            allow_networks=_networks(env.get("LEDGER_ALLOW_NETWORKS") or ""),
            checkpoint_every=_int(env, "LEDGER_CHECKPOINT_EVERY", 200_000, 0, 10**12),
        )
        settings.validate()
        return settings

    def with_store(self, store: str) -> Settings:
        changed = replace(self, store=store)
        changed.validate()
        return changed

    def validate(self) -> None:
        if self.is_postgres:
            parse_postgres(self.store)  # raises ConfigError when it cannot
        elif not self.store.startswith("sqlite:///"):
            raise ConfigError(
                f"LEDGER_STORE={redact_url(self.store)!r} is not understood: use sqlite:///path/file.sqlite"
                " or postgresql://user@host:5432/dbname"
            )
        if self.broker is not None:
            _ = self.broker_servers  # raises ConfigError when it cannot

    @property
    def is_postgres(self) -> bool:
        return self.store.startswith(("postgresql://", "postgres://"))

    @property
    def sqlite_path(self) -> Path:
        return Path(self.store.removeprefix("sqlite:///")).expanduser()

    @property
    def postgres(self) -> PostgresTarget:
        return parse_postgres(self.store)

    @property
    def broker_servers(self) -> list[str]:
        if not self.broker:
            raise ConfigError("LEDGER_BROKER is not set (e.g. kafka://127.0.0.1:9092)")
        parts = urlsplit(self.broker)
        servers = [s for s in parts.netloc.split(",") if s]
        if parts.scheme != "kafka" or not servers or not all(
            re.fullmatch(r"[\w.-]+:\d{1,5}", s) for s in servers
        ):
            raise ConfigError(f"LEDGER_BROKER={redact_url(self.broker)!r} is not understood: "
                              "use kafka://host:port[,host:port]")
        return servers


def parse_postgres(url: str) -> PostgresTarget:
    from eventstore.target import PostgresTarget

    parts = urlsplit(url)
    dbname = parts.path.lstrip("/")
    if not parts.hostname or not dbname:
        raise ConfigError(f"LEDGER_STORE={redact_url(url)!r}: a PostgreSQL URL needs a host and a database"
                          " name (postgresql://user@host:5432/dbname)")
    schema = (parse_qs(parts.query).get("schema") or ["public"])[0]
    if not re.fullmatch(r"[a-z_][a-z0-9_]{0,50}", schema):
        raise ConfigError(f"LEDGER_STORE: invalid schema name {schema!r}")
    try:
        port = parts.port or 5432
    except ValueError:
        raise ConfigError(f"LEDGER_STORE={redact_url(url)!r}: invalid port") from None
    return PostgresTarget(host=parts.hostname, port=port, dbname=dbname,
                          user=unquote(parts.username or "postgres"),
                          password=unquote(parts.password or ""), schema=schema)


def _networks(text: str) -> tuple[str, ...]:
    from workers.fetching.addresses import parse_networks

    try:
        return tuple(str(net) for net in parse_networks(text))
    except ValueError as error:
        raise ConfigError(f"LEDGER_ALLOW_NETWORKS: {error}") from None


def _deployment(text: str) -> str:
    if text and not re.fullmatch(r"[a-z0-9][a-z0-9-]{0,31}", text):
        raise ConfigError(f"LEDGER_DEPLOYMENT={text!r}: use up to 32 lowercase letters, digits "
                          "and '-' (it names Kafka topics and consumer groups)")
    return text


def _delay(text: str | None) -> float | None:
    if not text:
        return None
    try:
        value = float(text)
    except ValueError:
        raise ConfigError(f"LEDGER_DEFAULT_CRAWL_DELAY={text!r} is not a number") from None
    if not 0 <= value <= 3600:
        raise ConfigError(f"LEDGER_DEFAULT_CRAWL_DELAY={value} must be between 0 and 3600")
    return value


def _int(env: Mapping[str, str], name: str, default: int, low: int, high: int) -> int:
    text = env.get(name)
    if not text:
        return default
    try:
        value = int(text)
    except ValueError:
        raise ConfigError(f"{name}={text!r} is not an integer") from None
    if not low <= value <= high:
        raise ConfigError(f"{name}={value} must be between {low} and {high}")
    return value
