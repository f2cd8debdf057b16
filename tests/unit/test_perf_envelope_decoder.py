"""The batch decoder (`from_stored_rows`: typed values rewritten in the bytes, then
orjson) gives exactly the envelopes of the reference path (`from_stored`: `json`
with the `_plain` hook), on real stored events and on every odd state we can think
of — including the ones it must hand to the slow path."""

from __future__ import annotations

import json
import random
from datetime import UTC, datetime, timedelta, timezone
from decimal import Decimal
from pathlib import Path
from typing import Any
from uuid import UUID, uuid4

import pytest
from eventsourcing.persistence import DatetimeAsISO, DecimalAsStr, JSONTranscoder, UUIDAsHex
from hypothesis import given, settings
from hypothesis import strategies as st

from domain import envelope
from domain.application import CrawlLedger
from domain.envelope import StoredRow, from_stored, from_stored_rows
from domain.values import CrawlSuccess, Observation, Offer
from eventstore import SQLiteBackend

T0 = datetime(2026, 11, 22, 8, 0, 3, tzinfo=UTC)
TOPIC = "domain.product:Product.Observed"


def transcoder() -> JSONTranscoder:
    coder = JSONTranscoder()
    for transcoding in (UUIDAsHex(), DecimalAsStr(), DatetimeAsISO()):
        coder.register(transcoding)
    return coder


CODER = transcoder()


def same(rows: list[StoredRow]) -> None:
    """Batch decoding equals event-by-event decoding: fields, value types, JSON bytes."""
    expected = [from_stored(*row) for row in rows]
    got = from_stored_rows(rows)
    assert [e.to_json() for e in got] == [e.to_json() for e in expected]
    assert [e.__dict__ for e in got] == [e.__dict__ for e in expected]
    assert [repr(e.payload) for e in got] == [repr(e.payload) for e in expected]


def row(position: int, payload: dict[str, Any], raw: bytes | None = None) -> StoredRow:
    state = raw if raw is not None else CODER.encode(
        {"timestamp": T0 + timedelta(microseconds=position), **payload})
    return (position, uuid4(), position, TOPIC, state)


@pytest.fixture(scope="module")
def corpus() -> list[StoredRow]:
    """Every event of a few catalog crawls (stores, jobs, products, price changes …)."""
    app = CrawlLedger(SQLiteBackend(Path(":memory:")))
    store = app.register_store(name="Shop ü", base_url="https://s.example", platform="shopify",
                               now=T0)
    job = app.schedule_job(kind="catalog", url="https://s.example/p", now=T0, store_id=store,
                           every=3600)
    for cycle in range(6):
        now = app.get_job(job).next_run_at
        task = app.lease(job, "w", 60, now)
        observations = tuple(
            Observation(f"p{i}", f"Prodüct \"{i}\"\n", (Offer("1g", Decimal(f"{10 + (i + cycle) % 4}.50"),
                                                            "USD"),), brand="B")
            for i in range(40) if (i + cycle) % 7)
        app.record_success(job, task.lease_id, CrawlSuccess(
            200, "https://s.example/p", "t", "1", f"h{cycle}", observations=observations), now)
    rows = [(n.id, n.originator_id, n.originator_version, n.topic, n.state)
            for n in app.recorder.select_notifications(start=1, limit=10_000)]
    app.close()
    assert len(rows) > 300
    return rows


def test_real_events_in_batches(corpus: list[StoredRow]) -> None:
    for size in (1, 7, 100, 1000):
        for start in range(0, len(corpus), size):
            same(corpus[start:start + size])


def test_ids_as_text_or_uuid(corpus: list[StoredRow]) -> None:
    as_text = [(p, str(i).upper() if p % 2 else str(i), v, t, s) for p, i, v, t, s in corpus]
    assert from_stored_rows(as_text) == from_stored_rows(corpus)


ODD: list[dict[str, Any]] = [
    {"at": datetime(2026, 1, 1, tzinfo=UTC)},  # no microseconds
    {"at": datetime(2026, 1, 1, 0, 0, 0, 5, tzinfo=UTC)},
    {"at": datetime(2026, 1, 1, 2, tzinfo=timezone(timedelta(hours=2)))},  # not UTC
    {"at": datetime(2026, 1, 1)},  # naive
    {"observed_at": "2026-01-01T00:00:00+00:00", "at": T0},  # a plain string wins
    {"id": UUID(int=12345), "ids": [uuid4(), {"deep": uuid4()}]},
    {"price": Decimal("1E+3"), "p2": Decimal("-0.00"), "nan": Decimal("NaN")},
    {"nested": {"_type_": "decimal_str", "_data_": "1"}},  # an explicit dict: typed
    {"x": {"_data_": "1", "_type_": "decimal_str"}},  # keys the other way round
    {"x": {"_type_": "decimal_str", "_data_": "1", "more": 1}},  # three keys: not typed
    {"x": {"_type_": None, "_data_": "1"}},
    {"x": {"_type_": "", "_data_": "1"}},
    {"x": {"_type_": "odd", "_data_": [1, {"_type_": "uuid_hex", "_data_": uuid4().hex}]}},
    {"x": {"_type_": "odd", "_data_": {"_type_": "decimal_str", "_data_": "7"}}},
    {"x": {"_type_": "datetime_iso", "_data_": {"_type_": "decimal_str",
                                                 "_data_": "2026-01-01T00:00:00+00:00"}}},
    {"x": {"_type_": "decimal_str", "_data_": "_type_"}},
    {"text": '{"_type_":"decimal_str","_data_":"1"}'},  # inside a string: not typed
    {"text": "\"_type_\"", "k": "\\u0041", "ctl": "\x01\x1f", "uni": "ü€😀", "sl": "a/b\\"},
    {"\u005ftype_": "decimal_str", "_data_": "9"},
    {"big": 2**64, "bigger": -(2**70), "edge": 2**63 - 1, "neg": -(2**63),
     "u64": 2**64 - 1, "digits": "1234567890123456789012"},
    {"floats": [0.1, -0.0, 1e-320, 1.7976931348623157e308, 2.5, 1e16, 123456789.123456789]},
    {"empty": {}, "list": [], "none": None, "t": True, "f": False},
    {"class_version": 2, "originator_topic": "x:Y"},
]


@pytest.mark.parametrize("payload", ODD, ids=range(len(ODD)))
def test_odd_states(payload: dict[str, Any], corpus: list[StoredRow]) -> None:
    odd = row(10_000, payload)
    same([odd])
    same([*corpus[:50], odd, *corpus[50:100]])  # one odd state in a batch of ordinary ones


@pytest.mark.parametrize("raw", [
    b'{"timestamp":"2026-01-01T00:00:00+00:00", "at" : {"_type_" : "datetime_iso",'
    b' "_data_" : "2026-01-01T00:00:00+00:00"}}',  # whitespace: typed values not rewritten
    b'{"timestamp":{"_type_":"datetime_iso","_data_":"2026-01-01T00:00:00+00:00"},'
    b'"x":{"_type_":"decimal_str","_data_":"a\\"b"}}',
    b'{"timestamp":"t","\\u005ftype_":"uuid_hex","_data_":"00000000000000000000000000000001"}',
    b'{"timestamp":"t","a":NaN,"b":Infinity,"c":-Infinity,"d":1e400}',
    b'{"timestamp":"t","a":1,"a":2}',
    b'{"timestamp":"t","s":"\\ud800"}',
    # integers past 64 bits wherever a number can start: after [ , : and whitespace, negative
    b'{"timestamp":"t","a":[12345678901234567890123]}',
    b'{"timestamp":"t","a":[1,-18446744073709551616]}',
    b'{"timestamp":"t","a": 18446744073709551616}',
    b'{"timestamp":"t","a":\t-9223372036854775809,"b":"x"}',
    b'{"timestamp":"t","a":\n99999999999999999999}',
    b'{"timestamp":"t","a":\r99999999999999999999}',
])
def test_hand_written_states(raw: bytes, corpus: list[StoredRow]) -> None:
    odd = row(10_000, {}, raw)
    same([odd])
    same([*corpus[:20], odd])


@pytest.mark.parametrize("raw", [
    b'{"timestamp":"t"', b'not json', b'{"timestamp":"t","x":"\xff"}', b'',
    b'{"timestamp":"t","x":"a\x01b"}',
])
def test_broken_states_fail_as_before(raw: bytes, corpus: list[StoredRow]) -> None:
    broken = row(10_000, {}, raw)
    with pytest.raises(ValueError, match="stored event at position 10000"):
        from_stored_rows([*corpus[:20], broken])


def test_broken_states_that_join_into_valid_json(corpus: list[StoredRow]) -> None:
    halves = [row(1, {}, b'{"timestamp":"t","a":[1'), row(2, {}, b'2]}')]
    with pytest.raises(ValueError, match="stored event at position 1"):
        from_stored_rows(halves)


def test_random_digits_and_floats() -> None:
    rng = random.Random(7)
    values: list[Any] = [rng.getrandbits(rng.randint(1, 80)) * rng.choice((1, -1))
                         for _ in range(300)]
    values += [rng.uniform(-1e6, 1e6) for _ in range(300)]
    values += [float(f"{rng.randint(1, 10**17)}e{rng.randint(-330, 300)}") for _ in range(300)]
    rows = [row(i, {"v": v}) for i, v in enumerate(values)]
    same(rows)
    payloads = [e.payload["v"] for e in from_stored_rows(rows)]
    assert json.dumps(payloads) == json.dumps(values)


leaf = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False),
    st.text(), st.uuids(), st.decimals(allow_nan=False, allow_infinity=False),
    st.datetimes(timezones=st.sampled_from([UTC, timezone(timedelta(hours=-5))])),
    st.datetimes(),
)
KEYS = st.text(max_size=10).filter(lambda k: k not in ("timestamp", "class_version"))
values = st.recursive(leaf, lambda inner: st.lists(inner, max_size=4)
                      | st.dictionaries(st.text(max_size=8), inner, max_size=4), max_leaves=12)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.dictionaries(KEYS, values, max_size=6), min_size=1, max_size=8))
def test_any_library_encoded_state(payloads: list[dict[str, Any]]) -> None:
    same([row(i, p) for i, p in enumerate(payloads)])


def test_long_digit_runs_in_strings_take_the_fast_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """A lease id is 32 random hex digits: now and then 19 of them are decimal."""
    payloads: list[dict[str, Any]] = [
        {"lease_id": "a1234567890123456789012345678901"},
        {"url": "https://s.example/p/12345678901234567890123?v=-12345678901234567890"},
        {"sku": "12345678901234567890123", "n": [1, -2, 3], "x": 1.2345678901234567},
    ]
    rows = [row(i, p) for i, p in enumerate(payloads)]
    expected = from_stored_rows(rows)
    monkeypatch.setattr(envelope, "_BATCH", None)
    assert from_stored_rows(rows) == expected


def test_library_states_take_the_fast_path(corpus: list[StoredRow],
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    expected = from_stored_rows(corpus)
    monkeypatch.setattr(envelope, "_BATCH", None)  # the slow path would now fail
    assert from_stored_rows(corpus) == expected
