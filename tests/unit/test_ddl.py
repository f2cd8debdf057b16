"""Table creation that lost a race with another process is tried again, nothing else is."""

from __future__ import annotations

import pytest
from psycopg import errors

from streams.ddl import create_racing


def test_a_lost_creation_race_is_tried_again() -> None:
    calls: list[int] = []

    def create() -> None:
        calls.append(1)
        if len(calls) < 3:
            raise errors.UniqueViolation("duplicate key value violates pg_type_typname_nsp_index")

    create_racing(create)
    assert len(calls) == 3


def test_other_errors_and_endless_races_are_raised() -> None:
    calls: list[int] = []

    def broken() -> None:
        calls.append(1)
        raise errors.UndefinedColumn("no such column")

    with pytest.raises(errors.UndefinedColumn):
        create_racing(broken)
    assert len(calls) == 1

    def always_racing() -> None:
        raise errors.DuplicateTable("already exists")

    with pytest.raises(errors.DuplicateTable):
        create_racing(always_racing, attempts=2)
