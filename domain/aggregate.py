"""The base of the ledger's aggregates: events stamped with their command's time."""

from __future__ import annotations

from eventsourcing.domain import Aggregate

from domain.timeutil import event_timestamp


class LedgerAggregate(Aggregate):
    """An `Aggregate` whose events take their timestamp from the command's `now`
    (`domain.timeutil.command`), so a simulated clock stamps every event."""

    class Event(Aggregate.Event):
        create_timestamp = staticmethod(event_timestamp)

    class Created(Event, Aggregate.Created):
        pass
