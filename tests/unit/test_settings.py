"""Settings from the environment: defaults, store URLs, and fail-fast on bad values."""

from __future__ import annotations

from pathlib import Path

import pytest

from ledger.settings import DEFAULT_USER_AGENT, ConfigError, Settings


def test_defaults_are_an_sqlite_file_in_the_data_dir(tmp_path: Path) -> None:
    settings = Settings.from_env({"LEDGER_DATA_DIR": str(tmp_path)})
    assert settings.data_dir == tmp_path
    assert settings.store == f"sqlite:///{tmp_path.resolve() / 'ledger.sqlite'}"
    assert settings.sqlite_path == tmp_path.resolve() / "ledger.sqlite"
    assert not settings.is_postgres
    assert (settings.broker, settings.user_agent, settings.catalog_interval) == (
        None, DEFAULT_USER_AGENT, 4 * 3600)


def test_default_data_dir_is_dot_ledger() -> None:
    assert Settings.from_env({}).data_dir == Path(".ledger")


def test_explicit_sqlite_store(tmp_path: Path) -> None:
    settings = Settings.from_env({"LEDGER_STORE": f"sqlite:///{tmp_path}/x.sqlite"})
    assert settings.sqlite_path == tmp_path / "x.sqlite"


def test_postgres_store_is_parsed() -> None:
    settings = Settings.from_env(
        {"LEDGER_STORE": "postgresql://ledger:s%40cret@db.internal:6543/crawl?schema=prod_1"})
    pg = settings.postgres
    assert settings.is_postgres
    assert (pg.host, pg.port, pg.dbname, pg.user, pg.password, pg.schema) == (
        "db.internal", 6543, "crawl", "ledger", "s@cret", "prod_1")
    assert pg.conninfo == "host=db.internal port=6543 dbname=crawl user=ledger password=s@cret"


def test_postgres_defaults() -> None:
    pg = Settings.from_env({"LEDGER_STORE": "postgres://127.0.0.1/test"}).postgres
    assert (pg.port, pg.user, pg.password, pg.schema) == (5432, "postgres", "", "public")
    assert "password" not in pg.conninfo


def test_other_settings() -> None:
    settings = Settings.from_env({"LEDGER_BROKER": "kafka://k1:9092,k2:9093",
                                  "LEDGER_USER_AGENT": "bot/2", "LEDGER_CATALOG_INTERVAL": "600"})
    assert settings.broker_servers == ["k1:9092", "k2:9093"]
    assert (settings.user_agent, settings.catalog_interval) == ("bot/2", 600)
    assert Settings.from_env({}).checkpoint_every == 200_000
    assert Settings.from_env({"LEDGER_CHECKPOINT_EVERY": "0"}).checkpoint_every == 0


@pytest.mark.parametrize(("env", "names"), [
    ({"LEDGER_STORE": "mysql://x"}, "LEDGER_STORE"),
    ({"LEDGER_STORE": "memory://"}, "LEDGER_STORE"),
    ({"LEDGER_STORE": "postgresql://host-only"}, "LEDGER_STORE"),
    ({"LEDGER_STORE": "postgresql://h/db?schema=Bad-Name"}, "LEDGER_STORE"),
    ({"LEDGER_STORE": "postgresql://h:99999/db"}, "LEDGER_STORE"),
    ({"LEDGER_BROKER": "http://k:9092"}, "LEDGER_BROKER"),
    ({"LEDGER_BROKER": "kafka://k"}, "LEDGER_BROKER"),
    ({"LEDGER_CATALOG_INTERVAL": "often"}, "LEDGER_CATALOG_INTERVAL"),
    ({"LEDGER_CATALOG_INTERVAL": "59"}, "LEDGER_CATALOG_INTERVAL"),
    ({"LEDGER_CHECKPOINT_EVERY": "-1"}, "LEDGER_CHECKPOINT_EVERY"),
    ({"LEDGER_CHECKPOINT_EVERY": "often"}, "LEDGER_CHECKPOINT_EVERY"),
])
def test_bad_values_fail_fast_naming_the_variable(env: dict[str, str], names: str) -> None:
    with pytest.raises(ConfigError, match=names):
        Settings.from_env(env)


def test_with_store_validates(tmp_path: Path) -> None:
    settings = Settings.from_env({"LEDGER_DATA_DIR": str(tmp_path)})
    assert settings.with_store("postgresql://h/db").is_postgres
    with pytest.raises(ConfigError, match="LEDGER_STORE"):
        settings.with_store("redis://h")


def test_settings_are_frozen(tmp_path: Path) -> None:
    settings = Settings.from_env({"LEDGER_DATA_DIR": str(tmp_path)})
    with pytest.raises(AttributeError):
        settings.store = "x"  # type: ignore[misc]
