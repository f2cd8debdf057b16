"""Operator control of jobs: pause, resume, cancel, retry, force-run, reopen, requeue
dead, and moving recurring jobs' next runs to spread the load.

A mixin of `CrawlLedger`: each command loads the job, lets the aggregate decide
(refusing what its state does not allow) and saves it.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING
from uuid import UUID

from eventsourcing.domain import Aggregate

from domain.crawl_job import CrawlJob
from domain.timeutil import command, utc
from domain.values import Origin

__all__ = ["JobControls"]


class JobControls:
    if TYPE_CHECKING:  # provided by the application class this is mixed into
        def get_job(self, job_id: UUID | str) -> CrawlJob: ...

        def _save(self, *aggregates: Aggregate | None) -> Sequence[int]: ...

    def _control(self, job_id: UUID | str, action: str, now: datetime,
                 origin: Origin | None) -> None:
        job = self.get_job(job_id)
        getattr(job, action)(utc(now), origin)
        self._save(job)

    @command
    def pause(self, job_id: UUID | str, now: datetime, origin: Origin | None = None) -> None:
        self._control(job_id, "pause", now, origin)

    @command
    def resume(self, job_id: UUID | str, now: datetime, origin: Origin | None = None) -> None:
        self._control(job_id, "resume", now, origin)

    @command
    def cancel(self, job_id: UUID | str, now: datetime, origin: Origin | None = None) -> None:
        self._control(job_id, "cancel", now, origin)

    @command
    def retry(self, job_id: UUID | str, now: datetime, origin: Origin | None = None) -> None:
        self._control(job_id, "retry", now, origin)

    @command
    def force_run(self, job_id: UUID | str, now: datetime, origin: Origin | None = None
                  ) -> None:
        self._control(job_id, "force_run", now, origin)

    @command
    def reopen(self, job_id: UUID | str, now: datetime, origin: Origin | None = None) -> None:
        """Run a cancelled, completed or dead job again, with the settings it had."""
        self._control(job_id, "reopen_as_before", now, origin)

    @command
    def requeue_dead(self, job_ids: Sequence[UUID | str], now: datetime,
                     origin: Origin | None = None) -> list[UUID]:
        """Retry every given job that is dead (candidates come from the job-status model)."""
        requeued = []
        for job_id in job_ids:
            job = self.get_job(job_id)
            if job.state == "dead":
                job.retry(utc(now), origin)
                self._save(job)
                requeued.append(job.id)
        return requeued

    @command
    def move_jobs(self, moves: Sequence[tuple[UUID | str, datetime, str]], now: datetime,
                  origin: Origin | None = None) -> list[UUID]:
        """Move each job's next run (`Rescheduled` with the move's reason), in one save;
        a job that is no longer scheduled is left as it is."""
        moved = []
        jobs = []
        for job_id, next_run_at, reason in moves:
            job = self.get_job(job_id)
            if job.state == "scheduled" and not job.one_shot:
                job.move(utc(next_run_at), reason, utc(now), origin)
                jobs.append(job)
                moved.append(job.id)
        self._save(*jobs)
        return moved

