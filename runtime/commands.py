"""Operator commands and the one dispatcher every driver sends them to.

A command is a small frozen dataclass: what to change, and the `Origin` (actor,
surface, optional reason) that the events it produces record. Drivers — the CLI,
the HTTP API, the dashboard — build commands from their input (`JOB_CONTROLS` maps
the names they accept to command types) and call `Dispatcher.send`; one handler
per command type decides nothing itself but hands the command to the application,
whose aggregates refuse what their state does not allow.
"""

from __future__ import annotations

import getpass
import socket
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar
from uuid import UUID

from domain.application import CrawlLedger
from domain.values import Origin

__all__ = ["JOB_CONTROLS", "CancelJob", "Command", "DisableStore", "Dispatcher", "EnableStore",
           "ForceRunJob", "JobCommand", "Origin", "PauseJob", "RequeueDead", "ResumeJob",
           "RetryJob", "cli_origin", "token_origin"]


@dataclass(frozen=True)
class JobCommand:
    job_id: UUID | str
    origin: Origin


class PauseJob(JobCommand):
    """Stop a scheduled job from running until it is resumed."""


class ResumeJob(JobCommand):
    """Schedule a paused job again (its next run, or now if that has passed)."""


class CancelJob(JobCommand):
    """End a job for good (its lease, if any, ends with it)."""


class RetryJob(JobCommand):
    """Run a dead or scheduled job as soon as possible, with its attempts reset."""


class ForceRunJob(JobCommand):
    """Run a scheduled job now, ahead of others."""


@dataclass(frozen=True)
class RequeueDead:
    """Retry every one of these jobs that is dead (the others are left alone)."""

    job_ids: Sequence[UUID | str]
    origin: Origin


@dataclass(frozen=True)
class DisableStore:
    """No job of the store runs until it is enabled; the origin's reason is required."""

    store_id: UUID | str
    origin: Origin


@dataclass(frozen=True)
class EnableStore:
    store_id: UUID | str
    origin: Origin


Command = JobCommand | RequeueDead | DisableStore | EnableStore

#: the job commands by the name drivers accept (CLI subcommand, API path, dashboard button)
JOB_CONTROLS: dict[str, type[JobCommand]] = {
    "pause": PauseJob, "resume": ResumeJob, "cancel": CancelJob, "retry": RetryJob,
    "force-run": ForceRunJob}

C = TypeVar("C")


class Dispatcher:
    """Sends each command to its one handler."""

    def __init__(self, app: CrawlLedger) -> None:
        self._app = app
        self._handlers: dict[type[Any], Callable[[Any, datetime], Any]] = {
            PauseJob: lambda c, now: app.pause(c.job_id, now, c.origin),
            ResumeJob: lambda c, now: app.resume(c.job_id, now, c.origin),
            CancelJob: lambda c, now: app.cancel(c.job_id, now, c.origin),
            RetryJob: lambda c, now: app.retry(c.job_id, now, c.origin),
            ForceRunJob: lambda c, now: app.force_run(c.job_id, now, c.origin),
            RequeueDead: lambda c, now: app.requeue_dead(c.job_ids, now, c.origin),
            DisableStore: self._disable_store,
            EnableStore: lambda c, now: app.enable_store(c.store_id, now, c.origin),
        }

    def send(self, command: Command, now: datetime) -> Any:
        """Carry the command out at `now`; the domain's refusal propagates."""
        return self._handlers[type(command)](command, now)

    def _disable_store(self, command: DisableStore, now: datetime) -> None:
        reason = (command.origin.reason or "").strip()
        if not reason:
            raise ValueError("disabling a store needs a reason")
        self._app.disable_store(command.store_id, reason, now, command.origin)


def cli_origin(reason: str | None = None) -> Origin:
    """The CLI's actor: the operating-system user at this host."""
    return Origin(f"cli:{getpass.getuser()}@{socket.gethostname()}", "cli", reason or None)


def token_origin(name: str, scope: str, surface: str, reason: str | None = None) -> Origin:
    """An API or dashboard actor: the token's name and scope."""
    return Origin(f"token:{name} ({scope})", surface, (reason or "").strip() or None)
