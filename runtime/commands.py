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
from domain.retry import RetryPolicy
from domain.values import Origin
from runtime.alert_channels import (
    ChannelStore,
    NewSubscription,
    forget_subscription,
    record_subscription,
)

__all__ = ["JOB_CONTROLS", "AddSubscription", "CancelJob", "ChangeStorePolicy", "Command",
           "DisableProxy",
           "DisableStore", "Dispatcher", "EnableProxy", "EnableStore", "ForceRunJob",
           "JobCommand", "Origin", "PauseJob",
           "RemoveSubscription", "ReopenJob", "RequeueDead", "ResumeJob", "RetryJob",
           "ScheduleJob", "Scheduling", "TestAlert", "cli_origin", "token_origin"]


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


class ReopenJob(JobCommand):
    """Run a cancelled, completed or dead job again, with the settings it had, now."""


@dataclass(frozen=True)
class ScheduleJob:
    """Schedule a crawl of `url` (`every=None`: one-shot). The job of this kind and URL,
    if it is cancelled, completed or dead, is reopened with these settings instead."""

    kind: str
    url: str
    origin: Origin
    store_id: UUID | str | None = None
    every: int | None = None
    priority: int = 0
    retry_policy: RetryPolicy = RetryPolicy()
    adaptive: bool = True
    start_at: datetime | None = None


@dataclass(frozen=True)
class Scheduling:
    """What `ScheduleJob` did: the job, and whether it was reopened (not new)."""

    job_id: UUID
    reopened: bool


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


@dataclass(frozen=True)
class AddSubscription:
    """Record an alert subscription and keep its (admitted) channel beside the log;
    answers the new subscription's id."""

    new: NewSubscription
    origin: Origin


@dataclass(frozen=True)
class RemoveSubscription:
    """Remove a subscription for good and forget its channel's credentials."""

    subscription_id: UUID | str
    origin: Origin


@dataclass(frozen=True)
class TestAlert:
    """Record a test send to a subscription's channel and what came back.

    The send itself is the driver's (it is asynchronous network I/O and must not hold
    the ledger while it waits; `runtime.alert_channels.channel_to_test` and
    `sample_message` give it what to send), so the command carries its outcome."""

    __test__ = False  # a command, not a pytest test class

    subscription_id: UUID | str
    delivered: bool
    status: int | None
    error: str
    origin: Origin


@dataclass(frozen=True)
class ChangeStorePolicy:
    """Set a store's politeness: its crawl delay between requests (seconds)."""

    store_id: UUID | str
    crawl_delay: float
    origin: Origin


@dataclass(frozen=True)
class DisableProxy:
    """Take an egress proxy out of the pool; the origin's reason is recorded."""

    proxy_id: UUID | str
    origin: Origin


@dataclass(frozen=True)
class EnableProxy:
    proxy_id: UUID | str
    origin: Origin


Command = (JobCommand | ScheduleJob | RequeueDead | DisableStore | EnableStore | AddSubscription
           | RemoveSubscription | TestAlert | DisableProxy | EnableProxy | ChangeStorePolicy)

#: the job commands by the name drivers accept (CLI subcommand, API path, dashboard button)
JOB_CONTROLS: dict[str, type[JobCommand]] = {
    "pause": PauseJob, "resume": ResumeJob, "cancel": CancelJob, "retry": RetryJob,
    "force-run": ForceRunJob, "reopen": ReopenJob}

C = TypeVar("C")


class Dispatcher:
    """Sends each command to its one handler."""

    def __init__(self, app: CrawlLedger,
                 channels: Callable[[], ChannelStore] | None = None) -> None:
        self._app = app
        self._open_channels = channels
        self._channels: ChannelStore | None = None
        self._handlers: dict[type[Any], Callable[[Any, datetime], Any]] = {
            PauseJob: lambda c, now: app.pause(c.job_id, now, c.origin),
            ResumeJob: lambda c, now: app.resume(c.job_id, now, c.origin),
            CancelJob: lambda c, now: app.cancel(c.job_id, now, c.origin),
            RetryJob: lambda c, now: app.retry(c.job_id, now, c.origin),
            ForceRunJob: lambda c, now: app.force_run(c.job_id, now, c.origin),
            ReopenJob: lambda c, now: app.reopen(c.job_id, now, c.origin),
            ScheduleJob: self._schedule,
            RequeueDead: lambda c, now: app.requeue_dead(c.job_ids, now, c.origin),
            DisableStore: self._disable_store,
            EnableStore: lambda c, now: app.enable_store(c.store_id, now, c.origin),
            AddSubscription: lambda c, now: record_subscription(
                app, self.channels(), c.new, now, c.origin),
            RemoveSubscription: lambda c, now: forget_subscription(
                app, self.channels(), c.subscription_id, now, c.origin),
            TestAlert: lambda c, now: app.record_alert_test(
                c.subscription_id, c.delivered, c.status, c.error, now, c.origin),
            DisableProxy: lambda c, now: app.disable_proxy(
                c.proxy_id, c.origin.reason or "", now, c.origin),
            EnableProxy: lambda c, now: app.enable_proxy(c.proxy_id, now, c.origin),
            ChangeStorePolicy: lambda c, now: app.change_store_policy(
                c.store_id, now=now, origin=c.origin, crawl_delay=c.crawl_delay),
        }

    def channels(self) -> ChannelStore:
        """Where subscriptions' channels are kept (opened on first use)."""
        if self._channels is None:
            if self._open_channels is None:
                raise RuntimeError("this dispatcher was built without an alert channel store")
            self._channels = self._open_channels()
        return self._channels

    def send(self, command: Command, now: datetime) -> Any:
        """Carry the command out at `now`; the domain's refusal propagates."""
        return self._handlers[type(command)](command, now)

    def _schedule(self, command: ScheduleJob, now: datetime) -> Scheduling:
        job_id = self._app.schedule_job(
            kind=command.kind, url=command.url, now=now, store_id=command.store_id,
            every=command.every, priority=command.priority, retry_policy=command.retry_policy,
            adaptive=command.adaptive, start_at=command.start_at, origin=command.origin,
            reopen=True)
        # a new job's stream holds its `Scheduled` event only
        return Scheduling(job_id, self._app.get_job(job_id).version > 1)

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
