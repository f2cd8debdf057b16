"""The library's JSON transcoder, encoding with orjson where the bytes come out the same.

`JSONTranscoder.encode` (the `json` module with a `default` hook per typed
value) is about a quarter of appending an event. `FastJSONTranscoder` writes
the same state with orjson, whose `default` hook is the library's own
(`{"_type_": name, "_data_": …}`), but only for a state whose every value
orjson is known to write exactly as `json` does; any other state is encoded
by the library as before, so the stored bytes never differ
(tests/unit/test_transcoder.py compares the two on generated states).

Where the two differ, and why those states go to the library's encoder:
- orjson writes UUIDs, dataclasses, enums, `date` and `time` by itself, not
  through the transcodings: only exact `str`, `int`, `float`, `bool`, `None`,
  `dict` with `str` keys, `list`, `tuple` and the transcodings' own types pass;
- NaN and infinities (`json`: `NaN`, orjson: `null`) and floats below 1e-4 or
  from 1e16 (exponent spelling: `1e-05` / `1e-5`) do not pass;
- ints outside 64 bits make orjson raise: the library encodes them.
Non-ASCII text is written as raw UTF-8 by both (`ensure_ascii=False`).

Two ways to the same bytes. Most states are checked (a walk that copies nothing)
and handed to orjson as they are, with its `default` hook called for the typed
values orjson cannot write itself (`Decimal`, `frozenset`, the domain's
dataclasses; datetimes are passed to it too: `OPT_PASSTHROUGH_DATETIME`). A state
holding a typed value orjson would write by itself (a UUID) is copied with each
typed value replaced by its typed object first (`_typed`). ~3 µs an event's state
the first way, ~4 µs the second. The hook answers the two commonest typed values, a
Decimal (where its transcoding is the library's `str(value)`) and a datetime already
seen, without the walk: a third of an event's time in the mapper went to the hook.

The events a recording writes share their times (`timestamp`, `at`: the
command's time), so each datetime's typed object is remembered by the instant
and its UTC offset, the two that decide its ISO text (a bounded memo).
"""

from __future__ import annotations

from datetime import date, datetime, time, timedelta
from decimal import Decimal
from enum import Enum
from typing import Any
from uuid import UUID

import orjson
from eventsourcing.persistence import DecimalAsStr, JSONTranscoder, Mapper, StoredEvent, Transcoding
from eventsourcing.utils import get_topic

__all__ = ["FastJSONTranscoder", "LedgerMapper", "plain_json"]

_SCALARS: frozenset[type] = frozenset({str, int, bool, type(None)})
_TIMES_KEPT = 64  # a recording's events share a few times; ~450 bytes each

Times = dict[tuple[datetime, timedelta | None], Any]

#: what orjson passes to `default` instead of writing it itself
_PASSED = (orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS
           | orjson.OPT_PASSTHROUGH_SUBCLASS)
#: types orjson writes itself even so (as text, not as the library's typed object)
_NATIVE = (UUID, date, time, Enum)
#: the containers `_check` walks into
_WALKED = frozenset({dict, list, tuple})


class _Unfit(Exception):
    """A value orjson would write differently from `json`: the library encodes the state."""


class FastJSONTranscoder(JSONTranscoder):
    """`JSONTranscoder` with the same bytes, written by orjson when that is provably equal."""

    def __init__(self) -> None:
        super().__init__()
        #: registered type -> (name, encode): the typed values the walk writes itself
        self.hooks: dict[type, tuple[str, Any]] = {}
        #: (datetime, its UTC offset) -> its typed object, shared by the states encoded
        self.times: Times = {}
        #: the registered types orjson hands to `default` (datetime among them)
        self.passed: frozenset[type] = frozenset({datetime})
        #: the Decimal transcoding's name where it is the library's `str(value)`
        self._decimal: str | None = None

    def register(self, transcoding: Transcoding) -> None:
        super().register(transcoding)
        # the library's Decimal transcoding is `str(value)`: called as that, one call less
        encode = str if type(transcoding) is DecimalAsStr else transcoding.encode
        self.hooks[transcoding.type] = (transcoding.name, encode)
        if transcoding.type is Decimal:
            self._decimal = transcoding.name if encode is str else None
        kind = transcoding.type
        # (`json`, like orjson, writes a dict, list or tuple itself: those are walked)
        if kind not in _WALKED and (kind is datetime or not issubclass(kind, _NATIVE)):
            self.passed = self.passed | {kind}

    def encode(self, obj: Any) -> bytes:
        if len(self.times) > _TIMES_KEPT:
            self.times.clear()
        try:
            try:
                _check(obj, self.passed)
            except _Unfit:  # a UUID, say: the typed objects are put in a copy first
                return orjson.dumps(_typed(obj, self.hooks, self.times))
            return orjson.dumps(obj, default=self._default, option=_PASSED)
        except (_Unfit, TypeError, RecursionError):  # see the module's docstring; a cycle
            return super().encode(obj)

    def _default(self, value: Any) -> Any:
        """orjson's hook: the typed object of a value `_check` let through (`_Unfit`,
        a TypeError to orjson, where its data holds what orjson writes differently).
        The two commonest, a Decimal and a datetime already seen, without the walk."""
        kind = type(value)
        if kind is Decimal:
            decimal = self._decimal
            if decimal is not None:
                return {"_type_": decimal, "_data_": str(value)}
        elif kind is datetime:
            typed = self.times.get((value, value.utcoffset()))
            if typed is not None:
                return typed
        return _typed(value, self.hooks, self.times)


def _check(value: Any, passed: frozenset[type]) -> None:
    """Raise `_Unfit` unless orjson, given `_PASSED`, writes `value` as `json` does with
    the typed values handed to its `default`: what `_typed` accepts, minus the registered
    types orjson would write itself (`_NATIVE`). Keys are orjson's to refuse. With
    `_SCALARS` for `passed`: only plain JSON types pass (`plain_json`)."""
    kind = type(value)
    if kind is dict:
        items: Any = value.values()
    elif kind is list or kind is tuple:
        items = value
    elif kind in passed:
        return
    elif kind is float:
        if _same_float(value):
            return
        raise _Unfit
    else:
        raise _Unfit
    for item in items:
        kind = type(item)
        if kind not in _SCALARS and kind not in passed:  # a typed value: no call for it
            _check(item, passed)


def _typed(value: Any, hooks: dict[type, tuple[str, Any]], times: Times) -> Any:
    """`value` with each registered type's value replaced by the library's typed object
    (`{"_type_": name, "_data_": data}`); `_Unfit` where orjson would write it differently.
    (A key that is not a `str` makes orjson raise: the library encodes that state.)
    The walk is called for what is not a scalar: the commonest first (a datetime)."""
    kind = type(value)
    if kind is datetime:
        key = (value, value.utcoffset())
        typed = times.get(key)
        if typed is None:
            typed = times[key] = _hooked(value, hooks, times)
        return typed
    if kind is dict:
        return {key: item if type(item) in _SCALARS else _typed(item, hooks, times)
                for key, item in value.items()}
    if kind is list or kind is tuple:
        return [item if type(item) in _SCALARS else _typed(item, hooks, times) for item in value]
    if kind in _SCALARS:
        return value
    if kind is float:
        if _same_float(value):
            return value
        raise _Unfit
    return _hooked(value, hooks, times)


def _hooked(value: Any, hooks: dict[type, tuple[str, Any]], times: Times) -> Any:
    hook = hooks.get(type(value))
    if hook is None:
        raise _Unfit
    data = hook[1](value)
    return {"_type_": hook[0],
            "_data_": data if type(data) in _SCALARS else _typed(data, hooks, times)}


def _same_float(value: float) -> bool:
    """Whether orjson writes the float as `json` does: no exponent (0.0, or 1e-4 up to
    1e16); False for NaN and infinities."""
    return value == 0.0 or 1e-4 <= abs(value) < 1e16


def plain_json(value: Any) -> bytes | None:
    """Compact JSON of a value of plain JSON types, exactly as
    `json.dumps(value, separators=(",", ":")).encode()` writes it (ASCII, non-ASCII
    escaped), or None where orjson would write it differently."""
    try:
        _check(value, _SCALARS)  # plain JSON types only: no typed value passes
        data = orjson.dumps(value)
    except (_Unfit, TypeError, RecursionError):  # an int past 64 bits, a lone surrogate
        return None
    return data if data.isascii() and b"\x7f" not in data else None


class LedgerMapper(Mapper[Any]):
    """The library's mapper, writing a stored event with each event class's topic and
    class version looked up once and the frozen `StoredEvent` built in one step (its
    `__dict__`, fields in order); the library's own steps when a cipher or a
    compressor is configured."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        #: event class -> (topic, class version)
        self.classes: dict[type, tuple[str, int]] = {}

    def to_stored_event(self, domain_event: Any) -> StoredEvent:
        if self.cipher or self.compressor:
            return super().to_stored_event(domain_event)
        cls = type(domain_event)
        known = self.classes.get(cls)
        if known is None:
            known = self.classes[cls] = (get_topic(cls), getattr(cls, "class_version", 1))
        state = dict(vars(domain_event))
        originator_id = state.pop("originator_id")
        originator_version = state.pop("originator_version")
        if known[1] > 1:
            state["class_version"] = known[1]
        stored = object.__new__(StoredEvent)
        object.__setattr__(stored, "__dict__", {
            "originator_id": originator_id, "originator_version": originator_version,
            "topic": known[0], "state": self.transcoder.encode(state)})
        return stored
