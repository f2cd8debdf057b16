"""A bounded walk through a JSON document, looking for arrays of records.

Used by the generic menu reader on payloads of unknown shape, which may be hostile:
the walk is breadth first (the outermost array of records wins, and what a record
holds is not searched again), stops at a depth, a number of nodes and a time budget,
and decodes JSON held in strings (a CMS plugin's `{"data": "{\\"products\\": …}"}`) a
few levels deep at most. It never raises on the document's content: when a budget runs
out it returns what it found so far.
"""

from __future__ import annotations

import json
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal
from itertools import islice
from typing import Any

__all__ = ["Budget", "Found", "Infer", "find_records", "load", "named_currency"]

#: the largest string decoded as embedded JSON, in characters
MAX_EMBEDDED = 5_000_000
#: nodes walked between two readings of the clock
CLOCK_EVERY = 256
#: keys of one object searched for a currency code
MAX_KEYS = 400
_CURRENCY_KEYS = frozenset({"currency", "currencycode", "currency_code", "pricecurrency",
                            "currencyiso"})


#: reads an array as a whole: each element's record (or None), or None when it holds none
Infer = Callable[[list[Any]], "list[dict[str, Any] | None] | None"]


@dataclass
class Budget:
    """Limits of one walk. `clock` is injectable so a test can run the time out."""

    nodes: int = 300_000
    depth: int = 48
    seconds: float = 10.0
    embedded: int = 3
    clock: Callable[[], float] = time.monotonic
    spent: int = 0
    _deadline: float | None = field(default=None, repr=False)
    _next_look: int = field(default=0, repr=False)

    def spend(self, count: int = 1) -> bool:
        """Charge `count` nodes; False once any budget is exhausted. The clock is read
        every `CLOCK_EVERY` nodes."""
        if self._deadline is None:
            self._deadline = self.clock() + self.seconds
        self.spent += count
        if self.spent > self.nodes:
            return False
        if self.spent < self._next_look:
            return True
        self._next_look = self.spent + CLOCK_EVERY
        return self.clock() < self._deadline

    @property
    def exhausted(self) -> bool:
        return self.spent > self.nodes or (self._deadline is not None
                                           and self.clock() >= self._deadline)


@dataclass(frozen=True)
class Found:
    """A record, and the currency code named nearest above it (if any)."""

    record: dict[str, Any]
    currency: str | None


def load(text: str) -> Any:
    """The text as JSON (floats as Decimal), or None when it is not JSON or too deep."""
    stripped = text.strip()
    if not stripped.startswith(("{", "[")):
        return None
    try:
        return json.loads(stripped, parse_float=Decimal)
    except (ValueError, RecursionError):
        return None


def find_records(data: Any, as_record: Callable[[Any], dict[str, Any] | None],
                 budget: Budget | None = None, *, first_only: bool = False,
                 infer: Infer | None = None) -> list[Found]:
    """The outermost records (`as_record` says what a value's record is, or None): the
    elements of arrays, and objects that are records themselves (a product detail's
    `{"product": {…}}`), breadth first; what a record holds is not searched. An array
    none of whose elements is a record is given to `infer` (which reads the array as a
    whole, by its structure) and what it returns goes through `as_record`. With
    `first_only`, the walk stops at the first record (enough to say "a menu")."""
    budget = budget or Budget()
    found: list[Found] = []
    queue: deque[tuple[Any, int, str | None, int]] = deque([(data, 0, None, 0)])
    while queue and not (first_only and found) and budget.spend():
        value, depth, currency, embedded = queue.popleft()
        if depth > budget.depth:
            continue
        if isinstance(value, list):
            records = _records(value, as_record, budget, first_only)
            if (infer is not None and not any(records) and not budget.exhausted
                    and budget.spend(len(value))):
                records = _inferred(value, infer, as_record) or records
            for item, record in zip(value, records, strict=True):
                if record is not None:
                    found.append(Found(record, currency))
                elif isinstance(item, (dict, list, str)) and not budget.exhausted:
                    queue.append((item, depth + 1, currency, embedded))
        elif isinstance(value, dict):
            currency = named_currency(value) or currency
            record = as_record(value) if budget.spend(len(value)) else None
            if record is not None:
                found.append(Found(record, currency))
                continue
            queue.extend((child, depth + 1, currency, embedded) for child in value.values()
                         if isinstance(child, (dict, list, str)))
        elif isinstance(value, str) and embedded < budget.embedded:
            inner = _embedded(value, budget)
            if inner is not None:
                queue.append((inner, depth + 1, currency, embedded + 1))
    return found


def _inferred(items: list[Any], infer: Infer, as_record: Callable[[Any], dict[str, Any] | None]
              ) -> list[dict[str, Any] | None] | None:
    inferred = infer(items)
    if inferred is None:
        return None
    return [None if row is None else as_record(row) for row in inferred]


def _records(items: list[Any], as_record: Callable[[Any], dict[str, Any] | None],
             budget: Budget, first_only: bool) -> list[dict[str, Any] | None]:
    records: list[dict[str, Any] | None] = [None] * len(items)
    for index, item in enumerate(items):
        if not budget.spend(1 + (len(item) if isinstance(item, dict) else 0)):
            break
        if isinstance(item, dict):
            records[index] = as_record(item)
            if first_only and records[index] is not None:
                break
    return records


def _embedded(text: str, budget: Budget) -> Any:
    stripped = text.lstrip()
    if len(stripped) < 2 or len(stripped) > MAX_EMBEDDED or stripped[0] not in "{[":
        return None
    if not budget.spend(len(stripped) // 1000):
        return None
    inner = load(stripped)
    return inner if isinstance(inner, (dict, list)) else None


def named_currency(record: dict[str, Any]) -> str | None:
    """The currency code the object names, or one of its child objects does
    (`{"store": {"currency": "CAD"}, "products": […]}`)."""
    own = _own_currency(record)
    if own is not None:
        return own
    children = (_own_currency(child) for child in islice(record.values(), MAX_KEYS)
                if isinstance(child, dict))
    return next((code for code in children if code is not None), None)


def _own_currency(record: dict[str, Any]) -> str | None:
    for key, value in islice(record.items(), MAX_KEYS):
        if (key.lower() in _CURRENCY_KEYS and isinstance(value, str) and len(value) == 3
                and value.isalpha()):
            return value.upper()
    return None
