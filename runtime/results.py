"""Recording crawl results: the `RecordResult` command and its one handler.

Every driver that crawls — the embedded runner's and the Faust agent's workers
(`runtime.work.JobWorker`) and the bot API (`runtime.remote.BotPages`) — sends a
leased job's outcome as a `RecordResult`, whose `Origin` names the worker (or bot
token) and the surface (`runner`, `agent`, `bot`); the `Succeeded`/`Failed` event
records them. `ResultHandler` records it the one way:

- in a group commit with the other results waiting (`GroupCommit`: one transaction);
- again, with backoff, while the event store is unavailable (up to `patience`);
- a lease lost meanwhile (expired and reaped, or the job cancelled) records nothing
  and answers None;
- a success the domain refuses ends the attempt as a `worker_error` failure instead
  of leaving the job leased until its lease runs out.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from domain.application import CrawlLedger
from domain.errors import LeaseLost, LedgerError
from domain.recording import Recorded, Recording
from domain.values import CrawlFailure, CrawlOutcome, Origin
from runtime.clock import Clock
from runtime.db_thread import DbThread, retrying_while_unavailable
from runtime.defaults import DEFAULTS

__all__ = ["RecordResult", "ResultHandler", "worker_origin"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RecordResult:
    """Record the outcome of a leased job's crawl (a success or a failure)."""

    job_id: str
    lease_id: str
    outcome: CrawlOutcome
    origin: Origin


def worker_origin(name: str, surface: str) -> Origin:
    """A crawl worker's actor: its name (`worker:<host>:<pid>:<n>`), through `surface`."""
    return Origin(f"worker:{name}", surface)


class ResultHandler:
    """The handler of `RecordResult` (see the module's docstring)."""

    def __init__(self, app: CrawlLedger, db: DbThread, clock: Clock,
                 patience: float = DEFAULTS.lease_ttl) -> None:
        self.app = app
        self.db = db
        self.clock = clock
        #: how long a result waits for an unavailable event store before its error is raised
        self.patience = patience

    async def send(self, command: RecordResult) -> Recorded | None:
        """The result recorded (or a duplicate's), None when its lease was lost."""
        group = self.db.group_commit(self.app)
        try:
            return await retrying_while_unavailable(
                lambda: group.record(self._recording(command, command.outcome)),
                f"recording job {command.job_id}", patience=self.patience)
        except LeaseLost as lost:  # the lease expired and was reaped (or cancelled) meanwhile
            log.warning("result of job %s not recorded: %s", command.job_id, lost)
            return None
        except LedgerError as refused:
            if not command.outcome.ok:
                raise
            # the result itself was refused: end the attempt as a failure rather than
            # leaving the job leased until its lease runs out
            log.error("result of job %s refused: %s", command.job_id, refused)
            failure = CrawlFailure("worker_error", f"result refused: {refused}", retryable=True)
            return await retrying_while_unavailable(
                lambda: group.record(self._recording(command, failure)),
                f"recording job {command.job_id}'s failure", patience=self.patience)

    def _recording(self, command: RecordResult, outcome: CrawlOutcome) -> Recording:
        return Recording(command.job_id, command.lease_id, outcome, self.clock.now(),
                         command.origin)
