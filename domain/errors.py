"""Errors the command side raises for invalid commands.

    LedgerError
    ├── NotFound                an unknown store, job or product id
    ├── InvalidTransition       a command not valid from the aggregate's state
    ├── InvalidInput            a bad URL, interval, price, policy value …
    ├── Forbidden               a caller acting for what is not its own (a bot's worker)
    ├── Conflict                a concurrent writer got there first (lease race)
    │   └── LeaseLost           a result/extension for a lease that is not current
    └── EventStoreNotEmpty      an import into a store that already holds events

Every one of them means: nothing was recorded.
"""

from __future__ import annotations


class LedgerError(Exception):
    """Base class: the command was refused and nothing was recorded."""


class NotFound(LedgerError):
    pass


class InvalidTransition(LedgerError):
    pass


class InvalidInput(LedgerError, ValueError):
    pass


class Forbidden(LedgerError):
    pass


class Conflict(LedgerError):
    pass


class LeaseLost(Conflict):
    pass


class EventStoreNotEmpty(LedgerError):
    """An import into an event store that already holds events."""
