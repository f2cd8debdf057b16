"""The base of the ledger's aggregates: events stamped with their command's time, and
command methods that trigger their events without the library's per-call argument
handling.

A method decorated with `@event("Name")` is, in the library, a descriptor that
builds a bound decorator object on every call, maps the arguments to names
through a cached signature, filters them twice against the event class and the
method (`filter_kwargs_for_method_params`), copies them, constructs the event,
checks it against the aggregate (`mutate`) and calls the method with the
event's attributes (`apply`): ~9 µs an event, a quarter of recording a catalog
result. `LedgerAggregate` replaces each such method, once the library has
defined its event class, by a plain function doing the same steps with the
names worked out once: the same event class with the same attributes, the
method's body run with the same values before the version and `modified_on`
move, the event appended to the pending events (~4 µs). The event's `__dict__`
is written at once, its fields in the dataclass's order (the stored JSON's key
order), instead of through the frozen dataclass's `__init__` (one
`object.__setattr__` a field); `DomainEvent.__post_init__`'s one check, a UUID
originator id, is kept. A method whose event
the library would build differently is left to the library: `__init__`
(the created event), property setters, an event class whose `apply` is not the
decorator's, a method with a `timestamp` parameter, *args/**kwargs.
`tests/unit/test_fast_commands.py` compares events and state with the library's.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable
from types import MemberDescriptorType
from typing import Any
from uuid import UUID

from eventsourcing.domain import (
    Aggregate,
    CommandMethodDecorator,
    DecoratedFuncCaller,
    DomainEvent,
    decorated_func_callers,
)

from domain.timeutil import event_timestamp

__all__ = ["LedgerAggregate", "fast_command"]


class LedgerAggregate(Aggregate):
    """An `Aggregate` whose events take their timestamp from the command's `now`
    (`domain.timeutil.command`), so a simulated clock stamps every event."""

    class Event(Aggregate.Event):
        create_timestamp = staticmethod(event_timestamp)

    class Created(Event, Aggregate.Created):
        pass

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)  # the library defines the event classes here
        for name, value in tuple(vars(cls).items()):
            if isinstance(value, CommandMethodDecorator):
                command = fast_command(value)
                if command is not None:
                    setattr(cls, name, command)


def fast_command(decorator: CommandMethodDecorator) -> Callable[..., None] | None:
    """The decorated method as a plain function triggering its event as the library
    would; None where the library's path must be kept (see the module's docstring)."""
    func = decorator.decorated_func
    event_cls: Any = decorated_func_callers.get(decorator)
    if (event_cls is None or func.__name__ in {"__init__", "_"} or decorator.decorated_property
            or decorator.is_property_setter or event_cls.apply is not DecoratedFuncCaller.apply):
        return None
    parameters = list(inspect.signature(func).parameters.values())[1:]
    names = tuple(p.name for p in parameters)
    fields = set(inspect.signature(event_cls).parameters)
    if ("timestamp" in names or not set(names) <= fields
            or any(p.kind is not p.POSITIONAL_OR_KEYWORD for p in parameters)):
        return None
    defaults = tuple((p.name, p.default) for p in parameters if p.default is not p.empty)
    create_timestamp = event_cls.create_timestamp
    count = len(names)
    construct = _constructor(event_cls, names)

    def command(self: Any, *args: Any, **kwargs: Any) -> None:
        if args:
            if len(args) > count:
                raise TypeError(f"{func.__qualname__}() takes {count} arguments "
                                f"({len(args)} given)")
            for name, value in zip(names, args, strict=False):
                if name in kwargs:
                    raise TypeError(f"{func.__qualname__}() got multiple values for "
                                    f"argument '{name}'")
                kwargs[name] = value
        for name, value in defaults:
            if name not in kwargs:
                kwargs[name] = value
        if len(kwargs) != count:
            unexpected = sorted(kwargs.keys() - set(names))
            missing = [name for name in names if name not in kwargs]
            raise TypeError(f"{func.__qualname__}(): unexpected {unexpected}, "
                            f"missing {missing}")
        version = self.version + 1
        new_event = construct(self.id, version, create_timestamp(), kwargs)
        func(self, **kwargs)  # as `apply`: the body, before the version moves
        self.version = version
        self.modified_on = new_event.timestamp
        self._pending_events.append(new_event)

    command.__name__ = func.__name__
    command.__qualname__ = func.__qualname__
    command.__doc__ = func.__doc__
    command.__module__ = func.__module__
    command.__wrapped__ = func  # type: ignore[attr-defined]
    command.library_decorator = decorator  # type: ignore[attr-defined]
    return command


BASE_FIELDS = ("originator_id", "originator_version", "timestamp")


def _constructor(event_cls: Any, names: tuple[str, ...]
                 ) -> Callable[[Any, int, Any, dict[str, Any]], Any]:
    """(id, version, timestamp, the method's arguments) -> the event: its `__dict__`
    written in field order where that is all its dataclass `__init__` would do (every
    field given, `DomainEvent`'s `__post_init__`), else that `__init__`."""
    fields = tuple(f.name for f in dataclasses.fields(event_cls))
    rest = fields[len(BASE_FIELDS):]
    direct = (fields[:len(BASE_FIELDS)] == BASE_FIELDS and sorted(rest) == sorted(names)
              and event_cls.__post_init__ is DomainEvent.__post_init__
              and event_cls.__dictoffset__ != 0  # instances keep their fields in __dict__
              and not any(isinstance(getattr(event_cls, name, None), MemberDescriptorType)
                          for name in fields))

    def by_init(originator_id: Any, version: int, timestamp: Any, kwargs: dict[str, Any]) -> Any:
        return event_cls(originator_id=originator_id, originator_version=version,
                         timestamp=timestamp, **kwargs)

    def by_dict(originator_id: Any, version: int, timestamp: Any, kwargs: dict[str, Any]) -> Any:
        if type(originator_id) is not UUID:  # the check of DomainEvent.__post_init__
            return by_init(originator_id, version, timestamp, kwargs)
        state = {"originator_id": originator_id, "originator_version": version,
                 "timestamp": timestamp}
        for name in rest:
            state[name] = kwargs[name]
        new_event = object.__new__(event_cls)
        object.__setattr__(new_event, "__dict__", state)
        return new_event

    return by_dict if direct else by_init
