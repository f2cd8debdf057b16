"""The fast transcoder writes exactly the library's bytes, and what it writes round-trips.

Generated states mix every kind of value an event or snapshot state can hold
and those that make orjson and `json` differ (NaN, infinities, tiny and huge
floats, ints past 64 bits, non-ASCII and control characters, lone
surrogates, UUIDs, naive and offset datetimes, Decimal NaN, non-str keys).
"""

from __future__ import annotations

import json
import math
from dataclasses import FrozenInstanceError
from datetime import UTC, datetime, timedelta, timezone
from decimal import Decimal
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest
from eventsourcing.persistence import (
    DatetimeAsISO,
    DecimalAsStr,
    JSONTranscoder,
    Mapper,
    Transcoding,
    UUIDAsHex,
)
from hypothesis import given, settings
from hypothesis import strategies as st

from domain.application import CrawlLedger
from domain.snapshots import register as register_snapshot_transcodings
from domain.transcoder import FastJSONTranscoder, LedgerMapper, plain_json
from domain.values import CrawlSuccess, Observation, Offer, Policy
from eventstore.sqlite import SQLiteBackend


def _transcoders() -> tuple[JSONTranscoder, FastJSONTranscoder]:
    library, fast = JSONTranscoder(), FastJSONTranscoder()
    for transcoder in (library, fast):  # the ledger's registrations, on both
        for transcoding in (UUIDAsHex(), DecimalAsStr(), DatetimeAsISO()):
            transcoder.register(transcoding)
        register_snapshot_transcodings(transcoder)
    return library, fast


LIBRARY, FAST = _transcoders()

floats = st.floats(allow_nan=True, allow_infinity=True) | st.sampled_from(
    [0.0, -0.0, 1e-4, 9.99e-5, 1e-5, 1e16, 9.9e15, 1e22, 5e-324, 0.1, 123.456])
ints = st.integers() | st.sampled_from([2**63 - 1, 2**63, 2**64 - 1, 2**64, -2**63, -2**63 - 1])
texts = st.text() | st.sampled_from(["é", "\x7f", "\x1f", "\u2028", "\ud800", "a\"b\\c\n", "日本"])
datetimes = st.datetimes(timezones=st.sampled_from(
    [None, UTC, timezone(timedelta(hours=5, minutes=30)), timezone(timedelta(seconds=-3601))]))
decimals = st.decimals(allow_nan=True, allow_infinity=True) | st.sampled_from(
    [Decimal("10.50"), Decimal("-0"), Decimal("1E+3"), Decimal("sNaN")])
typed = (datetimes | decimals | st.uuids() | st.frozensets(st.text(max_size=3), max_size=3)
         | st.builds(Policy, crawl_delay=st.floats(0, 10)))
leaves = st.none() | st.booleans() | ints | floats | texts | typed
keys = texts | st.integers(0, 3) | st.booleans() | st.none()
values = st.recursive(leaves, lambda inner: st.lists(inner, max_size=4)
                      | st.tuples(inner, inner) | st.dictionaries(keys, inner, max_size=4),
                      max_leaves=20)
states = st.dictionaries(st.text(), values, max_size=8)


def _library(transcoder: JSONTranscoder, state: Any) -> bytes | type[BaseException]:
    try:
        return transcoder.encode(state)
    except Exception as error:  # noqa: BLE001 - the error kind is compared
        return type(error)


@settings(max_examples=1500, deadline=None)
@given(states)
def test_the_fast_transcoder_writes_the_librarys_bytes(state: dict[str, Any]) -> None:
    assert _library(FAST, state) == _library(LIBRARY, state)


@settings(max_examples=500, deadline=None)
@given(states)
def test_what_it_writes_decodes_as_the_library_decodes_it(state: dict[str, Any]) -> None:
    encoded = _library(FAST, state)
    if isinstance(encoded, bytes):
        assert _same(FAST.decode(encoded), LIBRARY.decode(LIBRARY.encode(state)))


def _same(a: Any, b: Any) -> bool:
    """Equal, with NaN equal to NaN (`float` and `Decimal`)."""
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a):
        return math.isnan(b)
    if isinstance(a, Decimal) and isinstance(b, Decimal) and a.is_nan():
        return b.is_nan() and str(a) == str(b)
    if isinstance(a, dict) and isinstance(b, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b


def test_an_event_state_takes_the_fast_path_and_keeps_its_typed_values() -> None:
    state = {"timestamp": datetime(2026, 1, 1, tzinfo=UTC), "job_id": "j", "attempt": 1,
             "offers": ({"option": "1g", "price": Decimal("10.50"), "special_price": None},),
             "duration": 0.25, "name": "Crème"}
    encoded = FAST.encode(state)
    assert encoded == LIBRARY.encode(state)
    assert b'{"_type_":"decimal_str","_data_":"10.50"}' in encoded
    decoded = FAST.decode(encoded)
    assert decoded["timestamp"] == state["timestamp"] and decoded["offers"][0]["price"] == Decimal(
        "10.50")


@pytest.mark.parametrize("state", [
    {"store": Policy(crawl_delay=2.5), "ids": frozenset({"a"}), "at": datetime(2026, 1, 1)},
    {"id": UUID(int=7), "price": Decimal("1.5"), "at": datetime(2026, 1, 1, tzinfo=UTC)},
    {"deep": [{"policy": Policy(crawl_delay=1e-5)}], "price": Decimal("2")},
], ids=["handed to orjson's default", "copied first (a UUID)", "the library's (a tiny float)"])
def test_each_way_to_the_bytes_writes_the_librarys(state: dict[str, Any]) -> None:
    assert FAST.encode(state) == LIBRARY.encode(state)
    assert _same(FAST.decode(FAST.encode(state)), LIBRARY.decode(LIBRARY.encode(state)))


@pytest.mark.parametrize("value", [
    UUID(int=7), float("nan"), 1e-5, 2**64, {1: "a"}, "\x7f", "é", [float("inf")]])
def test_plain_json_refuses_what_orjson_writes_differently(value: Any) -> None:
    assert plain_json({"v": value}) is None


@settings(max_examples=1500, deadline=None)
@given(st.recursive(st.none() | st.booleans() | ints | floats | texts,
                    lambda inner: st.lists(inner, max_size=4)
                    | st.dictionaries(keys, inner, max_size=4), max_leaves=20))
def test_plain_json_is_json_dumps_or_nothing(value: Any) -> None:
    fast = plain_json(value)
    try:
        expected: bytes | None = json.dumps(value, separators=(",", ":")).encode()
    except (TypeError, UnicodeEncodeError):
        expected = None
    assert fast is None or fast == expected


def test_a_decimal_transcoding_of_its_own_is_called_as_the_library_calls_it() -> None:
    """The Decimal shortcut (`str(value)`) is taken only for the library's `DecimalAsStr`."""

    class DecimalAsCents(Transcoding):
        type, name = Decimal, "decimal_cents"

        def encode(self, obj: Decimal) -> int:
            return int(obj * 100)

        def decode(self, data: int) -> Decimal:
            return Decimal(data) / 100

    library: JSONTranscoder = JSONTranscoder()
    fast = FastJSONTranscoder()
    for transcoder in (library, fast):
        transcoder.register(DatetimeAsISO())
        transcoder.register(DecimalAsCents())
    state = {"price": Decimal("10.50"), "at": datetime(2026, 1, 1, tzinfo=UTC)}
    assert fast.encode(state) == library.encode(state)
    assert b'{"_type_":"decimal_cents","_data_":1050}' in fast.encode(state)


def test_a_transcoding_registered_for_a_container_does_not_skip_its_check() -> None:
    """`json` writes a tuple itself (never through a transcoding): the walk still goes
    into one, and a NaN in it still sends the state to the library's encoder."""

    class TupleAsList(Transcoding):
        type, name = tuple, "tuple_as_list"

        def encode(self, obj: tuple[Any, ...]) -> list[Any]:
            return list(obj)

        def decode(self, data: list[Any]) -> tuple[Any, ...]:
            return tuple(data)

    library: JSONTranscoder = JSONTranscoder()
    fast = FastJSONTranscoder()
    for transcoder in (library, fast):
        transcoder.register(TupleAsList())
    for state in ({"t": (1.5, float("nan"))}, {"t": (1.5, [2, 3])}):
        assert fast.encode(state) == library.encode(state)


def test_one_instant_in_other_offsets_keeps_each_offsets_text() -> None:
    """The remembered typed datetimes are keyed by the instant and its offset: equal
    instants in other offsets (and a naive time of the same wall clock) keep their text."""
    fast = _transcoders()[1]
    utc_time = datetime(2026, 1, 1, 12, tzinfo=UTC)
    same_instants = [utc_time, utc_time.astimezone(timezone(timedelta(hours=5, minutes=30))),
                     utc_time.astimezone(timezone(timedelta(hours=-1))), utc_time.replace(tzinfo=None),
                     utc_time]
    for when in same_instants * 2:
        state = {"timestamp": when, "at": when}
        assert fast.encode(state) == LIBRARY.encode(state)
    assert len({fast.encode({"at": when}) for when in same_instants}) == 4


def test_the_ledgers_mapper_stores_what_the_librarys_mapper_stores() -> None:
    """Every event of a store's, a job's and its products' lives (a class version 2
    event among them) and a snapshot: the same stored event, frozen like the library's."""
    app = CrawlLedger(SQLiteBackend(Path(":memory:")))
    try:
        now = datetime(2026, 1, 1, tzinfo=UTC)
        store = app.register_store(name="Shop", base_url="https://shop.example",
                                   platform="shopify", now=now)
        job = app.schedule_job(kind="catalog", url="https://shop.example/products.json",
                               now=now, store_id=store, every=3600)
        lease = app.lease(job, "w1", 300, now).lease_id
        app.record_success(job, lease, CrawlSuccess(
            http_status=200, final_url="https://shop.example/products.json", extractor="t",
            extractor_version="1", content_hash="c",
            observations=(Observation(provider_product_id="a", name="Crème",
                                      offers=(Offer("1g", Decimal("10.50"), "USD"),)),)), now)
        events = [app.mapper.to_domain_event(stored)
                  for stored in app.recorder.select_notifications(1, 1000)]
        product = app.get_product(next(iter(app.get_job(job).products)))
        events.append(type(product).Snapshot.take(product))
        assert isinstance(app.mapper, LedgerMapper)
        library = Mapper(transcoder=app.mapper.transcoder)
        assert any(getattr(type(e), "class_version", 1) > 1 for e in events)
        for event in events:
            stored = app.mapper.to_stored_event(event)
            assert stored == library.to_stored_event(event)
            assert list(vars(stored)) == ["originator_id", "originator_version", "topic", "state"]
        with pytest.raises(FrozenInstanceError):
            stored.topic = "changed"  # type: ignore[misc]
    finally:
        app.close()
