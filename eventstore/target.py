"""Where a PostgreSQL event store lives: plain values, without importing psycopg (an
embedded SQLite process never loads the PostgreSQL driver)."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["PostgresTarget"]


@dataclass(frozen=True)
class PostgresTarget:
    """Where a PostgreSQL event store lives (the password never appears in `repr`)."""

    host: str
    port: int
    dbname: str
    user: str
    password: str
    schema: str

    def __repr__(self) -> str:
        return f"PostgresTarget({self.describe()!r})"

    @property
    def conninfo(self) -> str:
        """A libpq connection string built by psycopg (quoting every value)."""
        from psycopg.conninfo import make_conninfo

        return make_conninfo(host=self.host, port=self.port, dbname=self.dbname, user=self.user,
                             password=self.password or None)

    def describe(self) -> str:
        return f"postgresql://{self.user}@{self.host}:{self.port}/{self.dbname}?schema={self.schema}"
