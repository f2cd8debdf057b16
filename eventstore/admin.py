"""PostgreSQL schema administration for the composition root and the demo: whether an
error means the server could not be reached, how many tables some schemas hold, and
dropping schemas. psycopg is imported only when one of these runs."""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["connection_failed", "drop_schemas", "table_count"]


def connection_failed(error: BaseException) -> bool:
    """Whether `error` is PostgreSQL's "cannot connect / connection lost" (psycopg's
    `OperationalError`), as opposed to a refused statement or a bug."""
    import psycopg

    return isinstance(error, psycopg.OperationalError)


def table_count(conninfo: str, schemas: Sequence[str]) -> int:
    """The tables the named schemas hold together."""
    import psycopg

    marks = ", ".join("%s" for _ in schemas)
    with psycopg.connect(conninfo, autocommit=True) as conn:
        row = conn.execute("SELECT count(*) FROM information_schema.tables "
                           f"WHERE table_schema IN ({marks})", tuple(schemas)).fetchone()
    return int(row[0]) if row else 0


def drop_schemas(conninfo: str, schemas: Sequence[str]) -> None:
    """Drop the named schemas and everything in them (those that exist)."""
    import psycopg
    from psycopg.sql import SQL, Identifier

    with psycopg.connect(conninfo, autocommit=True) as conn:
        for name in schemas:
            conn.execute(SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(Identifier(name)))
