"""What the embedded runner has done so far (`RunStats`), and how it waits out an
event store that stopped answering (`Outage`)."""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from dataclasses import dataclass, field

from domain.values import CrawlFailure
from runtime.alert_step import AlertBatch
from runtime.db_thread import first_line
from runtime.image_step import ImageBatch
from runtime.work import RunReport

__all__ = ["Outage", "RunStats"]

log = logging.getLogger("ledger.drivers.embedded")


@dataclass
class RunStats:
    """What the runner has done so far (for progress displays and summaries)."""

    dispatched: int = 0
    succeeded: int = 0
    failed: int = 0
    events: int = 0
    products_seen: int = 0
    reaped: int = 0
    images_stored: int = 0
    images_failed: int = 0
    alerts_delivered: int = 0
    alerts_failed: int = 0
    in_flight: int = 0
    queued: int = 0
    failures: Counter[str] = field(default_factory=Counter)

    def note(self, report: RunReport) -> None:
        if isinstance(report.outcome, CrawlFailure):
            self.failed += 1
            self.failures[report.outcome.error_kind] += 1
        else:
            self.succeeded += 1
            self.products_seen += len(report.outcome.observations)
        if report.result is not None:
            self.events += report.result.events

    def note_alerts(self, batch: AlertBatch) -> None:
        self.alerts_delivered += batch.delivered
        self.alerts_failed += batch.failed
        self.events += batch.recorded

    def note_images(self, batch: ImageBatch) -> None:
        self.images_stored += batch.stored
        self.images_failed += batch.failed
        self.events += batch.recorded


@dataclass
class Outage:
    """The event store stopped answering at `since` (loop time): wait, with backoff."""

    since: float
    delay: float = 0.5

    async def pause(self, error: BaseException, limit: float) -> None:
        waited = asyncio.get_running_loop().time() - self.since
        if waited > limit:
            raise error
        log.warning("event store unavailable for %.0fs (%s); retrying in %.1fs",
                    waited, first_line(error), self.delay)
        await asyncio.sleep(self.delay)
        self.delay = min(self.delay * 2, 10.0)
