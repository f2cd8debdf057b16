"""The runtime's defaults, in one place: every driver and CLI flag starts from these."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Defaults:
    #: seconds a leased job stays with its worker without a heartbeat
    lease_ttl: float = 300.0
    #: jobs dispatched per scheduler tick (the distributed leader's slot)
    slot_size: int = 16
    #: events applied per projection transaction (live catch-up)
    projection_batch: int = 1000
    #: seconds between scheduler ticks
    tick_seconds: float = 1.0
    #: seconds a worker's agent waits to fill a batch from Kafka before it takes what came
    #: (under load a batch is what arrived while the last one was applied, plus this)
    batch_within: float = 0.05
    #: seconds the embedded runner lets results gather before one catch-up
    project_every: float = 0.05
    #: seconds in-flight crawls get to finish after a stop signal before they are released
    stop_deadline: float = 30.0
    #: bytes an events import uploaded over the API may have (`serve --max-import-mb`)
    import_max_bytes: int = 1 << 30


DEFAULTS = Defaults()
