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
defined its event class, by a function generated with the method's own
parameters (Python binds the arguments, and words a wrong call, as for the
method itself) doing the same steps: the same event class with the same
attributes, the method's body run with the same values before the version and
`modified_on` move, the event appended to the pending events (~2 µs; a closure
mapping the arguments to names itself took ~4 µs). The event's `__dict__`
is written at once, its fields in the dataclass's order (the stored JSON's key
order), instead of through the frozen dataclass's `__init__` (one
`object.__setattr__` a field); `DomainEvent.__post_init__`'s one check, a UUID
originator id, is kept. The command reads and sets `_id`, `_version` and
`_modified_on`, the attributes behind the library's properties, directly (a
class that overrides one of those properties is refused). A method whose event
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
    BaseAggregate,
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
        overridden = [name for name in _STATE_PROPERTIES
                      if getattr(cls, name) is not getattr(BaseAggregate, name)]
        if overridden:  # the generated commands set the attributes behind them directly
            raise TypeError(f"{cls.__qualname__} overrides {', '.join(overridden)}: a "
                            "LedgerAggregate keeps the library's")
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
            or any(p.kind is not p.POSITIONAL_OR_KEYWORD for p in parameters)
            or any(name.startswith("_l_") for name in names)
            or not all(name.isidentifier() for name in names)):
        return None
    command = _generated(func, event_cls, parameters)
    command.__name__ = func.__name__
    command.__qualname__ = func.__qualname__
    command.__doc__ = func.__doc__
    command.__module__ = func.__module__
    command.__wrapped__ = func  # type: ignore[attr-defined]
    command.library_decorator = decorator  # type: ignore[attr-defined]
    return command


BASE_FIELDS = ("originator_id", "originator_version", "timestamp")
#: the library's properties over `_id`, `_version` and `_modified_on`, which the generated
#: commands read and set directly (a property call each less an event)
_STATE_PROPERTIES = ("id", "version", "modified_on")


def _generated(func: Callable[..., None], event_cls: Any,
               parameters: list[inspect.Parameter]) -> Callable[..., None]:
    """The command as a function with the method's own parameters (Python binds the
    arguments and words their errors): the event built, the body run with the same
    values, then the version, `modified_on` and the pending events moved."""
    names = [p.name for p in parameters]
    fields = tuple(f.name for f in dataclasses.fields(event_cls))
    rest = fields[len(BASE_FIELDS):]
    direct = (fields[:len(BASE_FIELDS)] == BASE_FIELDS and sorted(rest) == sorted(names)
              and event_cls.__post_init__ is DomainEvent.__post_init__
              and event_cls.__dictoffset__ != 0  # instances keep their fields in __dict__
              and not any(isinstance(getattr(event_cls, name, None), MemberDescriptorType)
                          for name in fields))
    namespace: dict[str, Any] = {
        "_l_func": func, "_l_cls": event_cls, "_l_stamp": event_cls.create_timestamp,
        "_l_uuid": UUID, "_l_type": type, "_l_new": object.__new__, "_l_set": object.__setattr__}
    signature = []
    for p in parameters:
        if p.default is p.empty:
            signature.append(p.name)
        else:
            namespace[f"_l_default_{p.name}"] = p.default
            signature.append(f"{p.name}=_l_default_{p.name}")
    arguments = ", ".join(names)
    by_init = ("_l_cls(originator_id=_l_self._id, originator_version=_l_version, "
               "timestamp=_l_stamp(), " + ", ".join(f"{n}={n}" for n in names) + ")")
    if direct:
        state = ", ".join(f"{n!r}: {n}" for n in rest)
        build = (f"    _l_id = _l_self._id\n"
                 f"    if _l_type(_l_id) is not _l_uuid:\n"  # DomainEvent.__post_init__'s check
                 f"        _l_event = {by_init}\n"
                 f"    else:\n"
                 f"        _l_event = _l_new(_l_cls)\n"
                 f"        _l_set(_l_event, '__dict__', {{'originator_id': _l_id, "
                 f"'originator_version': _l_version, 'timestamp': _l_stamp(), {state}}})\n")
    else:
        build = f"    _l_event = {by_init}\n"
    source = (f"def {func.__name__}(_l_self, {', '.join(signature)}):\n"
              f"    _l_version = _l_self._version + 1\n"
              f"{build}"
              f"    _l_func(_l_self, {arguments})\n"  # as `apply`: the body, before the version moves
              f"    _l_self._version = _l_version\n"
              f"    _l_self._modified_on = _l_event.timestamp\n"
              f"    _l_self._pending_events.append(_l_event)\n")
    exec(compile(source, f"<command {func.__qualname__}>", "exec"), namespace)  # noqa: S102
    command = namespace[func.__name__]
    # Python words a binding error with the code's qualified name: the method's
    command.__code__ = command.__code__.replace(co_qualname=func.__qualname__)
    return command  # type: ignore[no-any-return]
