"""Evolving event schemas: class versions and upcast functions.

The protocol (docs/events.md):

1. A stored event is never rewritten. Its JSON keeps the fields it was recorded with,
   and `class_version` when above 1 (the eventsourcing library stores it); envelopes
   carry it as `schema_version`, and the audit chain hashes the event as recorded.
2. Changing an event's fields means a new class version: the event class declares
   `class_version = N` and a static `upcast_vK_vK+1(state)` for each step, which the
   library applies when it loads an older event into an aggregate.
3. Each step is one function here, in `STEPS`, shared by the event class and by
   envelope readers: `current(envelope)` gives an envelope's payload at the event's
   current version, for projections and subscribers that read the newer fields.
4. An upcast only adds or renames fields, with values that are true of the old event:
   a reason that was not recorded says so ("not recorded"), it is never guessed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from domain.envelope import Envelope

__all__ = ["CURRENT", "STEPS", "current", "dispatched_v1_v2", "leased_v1_v2"]

NOT_RECORDED = "not recorded (recorded before runs said why)"


def dispatched_v1_v2(state: dict[str, Any]) -> None:
    """`CrawlJob.Dispatched` v2 says why the run happens (`reason`) and for which due
    time and priority; v1 recorded only the time."""
    state.setdefault("reason", NOT_RECORDED)
    state.setdefault("due_at", None)
    state.setdefault("priority", None)


def leased_v1_v2(state: dict[str, Any]) -> None:
    """`CrawlJob.Leased` v2 says why the run happens (`reason`)."""
    state.setdefault("reason", NOT_RECORDED)


#: event type -> the upcast of version k to k + 1, at index k - 1
STEPS: dict[str, list[Callable[[dict[str, Any]], None]]] = {
    "CrawlJob.Dispatched": [dispatched_v1_v2],
    "CrawlJob.Leased": [leased_v1_v2],
}
#: event type -> its current class version
CURRENT = {event_type: len(steps) + 1 for event_type, steps in STEPS.items()}


def current(envelope: Envelope) -> dict[str, Any]:
    """The envelope's payload at its event's current version (a copy when upcast)."""
    steps = STEPS.get(envelope.event_type)
    if not steps or envelope.schema_version > len(steps):
        return envelope.payload
    payload = dict(envelope.payload)
    for step in steps[envelope.schema_version - 1:]:
        step(payload)
    return payload
