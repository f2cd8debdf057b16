"""The read-model database as projections see it: the port and adapters of
`eventstore.database`, which holds the engines' drivers and their DDL."""

from __future__ import annotations

from eventstore.database import (
    TYPES,
    Database,
    PostgresDatabase,
    Readers,
    Row,
    SQLiteDatabase,
    Tx,
    upsert_statement,
)

__all__ = ["TYPES", "Database", "PostgresDatabase", "Readers", "Row", "SQLiteDatabase", "Tx",
           "upsert_statement"]
