"""Event-store backends: one adapter per engine behind one small protocol.

`Backend` (eventstore.base) is what the command side (`domain.ports.Storage`)
and the notification-log reader (`projections.source`) need of a backend;
`SQLiteBackend` and `PostgresBackend` implement it. The composition root
chooses one by configuration.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from eventstore.base import Backend, unavailable
from eventstore.locks import Holder, StoreLocked
from eventstore.sqlite import SQLiteBackend
from eventstore.target import PostgresTarget

if TYPE_CHECKING:
    from eventstore.postgres import PostgresBackend

__all__ = ["Backend", "Holder", "PostgresBackend", "PostgresTarget", "SQLiteBackend", "StoreLocked",
           "unavailable"]


def __getattr__(name: str) -> Any:
    # the PostgreSQL backend loads psycopg and the library's PostgreSQL module (~20 MiB):
    # only a process that uses it imports it
    if name == "PostgresBackend":
        from eventstore.postgres import PostgresBackend
        return PostgresBackend
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
