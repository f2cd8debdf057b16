"""A save's new versions reach a snapshot version exactly when one of them, offset by the
aggregate's id, is a multiple of its class's interval (`domain.persistence`)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from domain.persistence import reaches_snapshot


@given(first=st.integers(1, 5000), count=st.integers(1, 200),
       offset=st.integers(0, 2**128 - 1), interval=st.integers(1, 100))
def test_counted_as_tried_version_by_version(first: int, count: int, offset: int,
                                             interval: int) -> None:
    last = first + count - 1
    expected = any((version + offset) % interval == 0 for version in range(first, last + 1))
    assert reaches_snapshot(first, last, offset, interval) is expected
