"""Event-store backends: one adapter per engine behind one small protocol.

`Backend` (eventstore.base) is what the command side (`domain.ports.Storage`)
and the notification-log reader (`projections.source`) need of a backend;
`SQLiteBackend` and `PostgresBackend` implement it. The composition root
chooses one by configuration.
"""

from __future__ import annotations

from eventstore.base import Backend, unavailable
from eventstore.locks import Holder, StoreLocked
from eventstore.postgres import PostgresBackend, PostgresTarget
from eventstore.sqlite import SQLiteBackend

__all__ = ["Backend", "Holder", "PostgresBackend", "PostgresTarget", "SQLiteBackend", "StoreLocked",
           "unavailable"]
