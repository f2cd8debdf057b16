"""The public event envelope: how every stored event is shown to the world.

`crawl-ledger events tail --json` prints these objects one per line, the
relay publishes them to Kafka, and projections consume them — so the
embedded runner and the Kafka consumers apply the very same input::

    {"event_id": "<stream_id>:<version>", "position": 48213,
     "stream_id": "6f1c…", "stream_type": "Product", "version": 17,
     "event_type": "Product.PriceChanged", "schema_version": 1,
     "occurred_at": "2026-11-22T08:00:03.000000Z",
     "recorded_at": "2026-11-22T08:00:03.412000Z",
     "payload": {"option": "1/8oz", "old": "45.00", "new": "39.00", …}}

Payload values are JSON primitives: Decimal as a string, datetimes as
ISO-8601 UTC strings (`…Z`), UUIDs in canonical form.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import Any
from uuid import UUID

import orjson

from domain.gcpause import gc_paused

SCHEMA_VERSION = 1
#: payload fields that hold the domain time of an event, by preference
OCCURRED_FIELDS = ("at", "observed_at", "registered_at")


@dataclass(frozen=True)
class Envelope:
    event_id: str
    position: int
    stream_id: str
    stream_type: str
    version: int
    event_type: str
    schema_version: int
    occurred_at: str
    recorded_at: str
    payload: dict[str, Any]
    #: the identity of the event store it came from (set by the relay on published envelopes)
    ledger_id: str | None = None

    def to_json(self) -> str:
        # __dict__ keeps the field order and, unlike asdict(), copies nothing
        return json.dumps(self.__dict__, separators=(",", ":"))

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        if data["ledger_id"] is None:  # set only in transport (`streams.relay`)
            del data["ledger_id"]
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Envelope:
        return cls(**{name: data[name] for name in cls.__dataclass_fields__
                      if name in data or name != "ledger_id"})

    @classmethod
    def from_json(cls, text: str | bytes) -> Envelope:
        return cls.from_dict(json.loads(text))


def _iso_z(text: str) -> str:
    if text.endswith("+00:00") and len(text) in (25, 32):  # fast path: our own UTC values
        body = text[:-6]
        return (body if len(body) == 26 else body + ".000000") + "Z"
    moment = datetime.fromisoformat(text)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _plain(obj: dict[str, Any]) -> Any:
    """Undo the event store's typed JSON (eventsourcing transcodings) into primitives."""
    kind = obj.get("_type_")
    if kind is None or "_data_" not in obj or len(obj) != 2:
        return obj
    data = obj["_data_"]
    if kind == "datetime_iso":
        return _iso_z(data)
    if kind == "uuid_hex":
        return str(UUID(data))
    return data  # decimal_str and anything else: its string form


def from_stored(position: int, originator_id: UUID | str, originator_version: int,
                topic: str, state: bytes) -> Envelope:
    """Build the envelope straight from a stored event (no aggregate classes needed)."""
    payload = json.loads(state, object_hook=_plain)
    return _envelope(position, _stream_id(originator_id), originator_version, topic, payload)


StoredRow = tuple[int, "UUID | str", int, str, bytes]


def _one(row: StoredRow) -> Envelope:
    try:
        return from_stored(*row)
    except ValueError as error:
        raise ValueError(f"stored event at position {row[0]} ({row[1]} v{row[2]}): {error}") from None


def from_stored_rows(rows: Sequence[StoredRow], canonical_ids: bool = False) -> list[Envelope]:
    """`from_stored` for a batch of (position, originator_id, version, topic, state) rows.

    Same envelopes, cheaper: the library's typed values are rewritten in the
    bytes into the very strings `_plain` makes of them (`_untyped`), and the
    whole batch is then parsed as one JSON array by orjson; each stream id is
    canonicalised once per batch. A batch the rewrite cannot prove equal is
    parsed by `json` with the `_plain` hook, as `from_stored` does.

    `canonical_ids`: the originator ids are strings already in `str(UUID)` form
    (PostgreSQL's `uuid::text` always is), so they are used as they are.
    """
    if not rows:
        return []
    with gc_paused():
        return _from_rows(rows, canonical_ids)


def _from_rows(rows: Sequence[StoredRow], canonical_ids: bool) -> list[Envelope]:
    try:
        payloads = _payloads([r[4] for r in rows])
    except (ValueError, TypeError):  # a broken state: the single-event path names the culprit
        return [_one(row) for row in rows]
    if len(payloads) != len(rows):  # broken states that joined into valid JSON
        return [_one(row) for row in rows]
    streams: dict[UUID | str, str] = {}
    kinds = _KINDS
    envelopes = []
    for (position, originator, version, topic, _), payload in zip(rows, payloads):
        if canonical_ids:
            stream_id = originator
        else:
            stream_id = (streams.get(originator)
                         or streams.setdefault(originator, _stream_id(originator)))
        event_type, stream_type = kinds.get(topic) or _kinds(topic)
        recorded_at = payload.pop("timestamp")
        payload.pop("originator_topic", None)
        schema_version = int(payload.pop("class_version", SCHEMA_VERSION))
        occurred = recorded_at
        for name in OCCURRED_FIELDS:
            value = payload.get(name)
            if isinstance(value, str):
                occurred = value
                break
        envelope = _new(Envelope)
        envelope.__dict__.update({
            "event_id": f"{stream_id}:{version}", "position": position, "stream_id": stream_id,
            "stream_type": stream_type, "version": version, "event_type": event_type,
            "schema_version": schema_version, "occurred_at": occurred,
            "recorded_at": recorded_at, "payload": payload})
        envelopes.append(envelope)
    return envelopes


#: topic -> (event type, stream type); topics are few (one per event class)
_KINDS: dict[str, tuple[str, str]] = {}


def _kinds(topic: str) -> tuple[str, str]:
    event_type = topic.split(":", 1)[-1]
    kinds = (event_type, event_type.split(".", 1)[0])
    if len(_KINDS) < 10_000:
        _KINDS[topic] = kinds
    return kinds


# The library's JSONTranscoder writes a typed value as a compact two-key
# object {"_type_":NAME,"_data_":DATA}. In valid JSON an unescaped `{"` only
# ever opens an object (in a string the quote would be escaped), so these
# patterns match exactly such objects whose data is a string without escapes;
# `_untyped` puts in their place the JSON string `_plain` returns (`_iso_z`'s
# fast path for our UTC datetimes, the data itself for other names; uuid_hex is
# left to the slow path). Typed values whose data is a string are leaves, so
# rewriting them before parsing equals the hook's bottom-up walk.
_DATETIME = re.compile(rb'\{"_type_":"datetime_iso","_data_":'
                       rb'("\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(\.\d{6})?(\+00:00")\}')
_OTHER = re.compile(rb'\{"_type_":"(?!datetime_iso"|uuid_hex")[^"\\]*","_data_":("[^"\\]*")\}')
# For the check below: every digit becomes 0 and every byte that can come just
# before a JSON number ([ : , and whitespace) becomes ":"; a run of 19 digits
# that starts a number's integer part then reads ':' or ':-' and 19 zeros. Runs
# inside strings (a lease id is 32 random hex digits) do not count.
_DIGITS = bytes.maketrans(b"123456789[, \t\n\r", b"000000000::::::")
_LONG_INT = b":" + b"0" * 19
_LONG_NEGATIVE = b":-" + b"0" * 19


def _untyped(batch: bytes) -> bytes:
    # split() keeps the groups (at C speed, unlike a template sub() on 3.11):
    # [text, "date, .micros|None, +00:00", text, …] -> [text, "date, .micros, Z", …]
    parts: list[bytes | None] = _DATETIME.split(batch)
    parts[2::4] = [micros or b".000000" for micros in parts[2::4]]
    parts[3::4] = [b'Z"'] * (len(parts) // 4)
    return b"".join(_OTHER.split(b"".join(parts)))  # type: ignore[arg-type]


def _payloads(states: list[bytes]) -> list[Any]:
    batch = _untyped(b",".join(states).join((b"[", b"]")))
    digits = batch.translate(_DIGITS)
    if (b'"_type_"' in batch  # a typed value left (another form, uuid, nested data)
            or b"\\u" in batch  # an escape could spell "_type_"
            or _LONG_INT in digits or _LONG_NEGATIVE in digits):  # orjson: ints past 64 bits
        return list(_BATCH.decode(b",".join(states).join((b"[", b"]")).decode()))
    payloads: list[Any] = orjson.loads(batch)
    return payloads


_BATCH = json.JSONDecoder(object_hook=_plain)
_new = object.__new__


def _stream_id(originator_id: UUID | str) -> str:
    return str(originator_id if isinstance(originator_id, UUID) else UUID(str(originator_id)))


def _envelope(position: int, stream_id: str, version: int, topic: str,
              payload: dict[str, Any]) -> Envelope:
    recorded_at = payload.pop("timestamp")
    payload.pop("originator_topic", None)
    schema_version = int(payload.pop("class_version", SCHEMA_VERSION))
    event_type = topic.split(":", 1)[-1]
    occurred = next((payload[f] for f in OCCURRED_FIELDS if isinstance(payload.get(f), str)),
                    recorded_at)
    # the frozen dataclass's __init__ costs ~3 µs (one object.__setattr__ per field);
    # filling __dict__ directly gives the equal object in a fifth of that
    envelope = _new(Envelope)
    envelope.__dict__.update(
        event_id=f"{stream_id}:{version}",
        position=position,
        stream_id=stream_id,
        stream_type=event_type.split(".", 1)[0],
        version=version,
        event_type=event_type,
        schema_version=schema_version,
        occurred_at=occurred,
        recorded_at=recorded_at,
        payload=payload,
    )
    return envelope
