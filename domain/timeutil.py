"""Time values passed into commands: UTC-aware datetimes, never the clock."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import UTC, datetime
from typing import ParamSpec, TypeVar

from eventsourcing.domain import datetime_now_with_tzinfo

from domain.errors import InvalidInput

P = ParamSpec("P")
R = TypeVar("R")


def utc(moment: datetime) -> datetime:
    """Refuse naive datetimes; normalise aware ones to UTC."""
    if moment.tzinfo is None or moment.utcoffset() is None:
        raise InvalidInput(f"timestamp {moment.isoformat()} has no timezone; pass UTC")
    return moment.astimezone(UTC)


def iso(moment: datetime | None) -> str | None:
    """A fixed-width ISO-8601 UTC string that sorts as text (read models)."""
    if moment is None:
        return None
    return utc(moment).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_iso(text: str | None) -> datetime | None:
    if not text:
        return None
    return datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(UTC)


#: the `now` of the command being run: every event it creates carries this time
_COMMAND_TIME: ContextVar[datetime | None] = ContextVar("command_time", default=None)


def event_timestamp() -> datetime:
    """An event's timestamp: its command's `now` (the runtime's one clock).

    Outside a command (a test building an aggregate by hand) it is the wall
    clock, as in the library.
    """
    return _COMMAND_TIME.get() or datetime_now_with_tzinfo()


@contextmanager
def command_time(now: datetime) -> Iterator[None]:
    """Within the block, every event created carries `now` (one command of several)."""
    token = _COMMAND_TIME.set(utc(now))
    try:
        yield
    finally:
        _COMMAND_TIME.reset(token)


def command(method: Callable[P, R]) -> Callable[P, R]:
    """Run a command with its `now` argument as the time of every event it creates."""
    signature = inspect.signature(method)

    @functools.wraps(method)
    def stamped(*args: P.args, **kwargs: P.kwargs) -> R:
        now = kwargs.get("now")
        if now is None:
            now = signature.bind_partial(*args, **kwargs).arguments.get("now")
        token = _COMMAND_TIME.set(utc(now) if isinstance(now, datetime) else None)
        try:
            return method(*args, **kwargs)
        finally:
            _COMMAND_TIME.reset(token)

    return stamped
