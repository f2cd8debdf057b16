"""Deterministic ids: the same inputs give the same stream, remembered or not."""

from __future__ import annotations

from uuid import UUID, uuid5

import pytest

from domain import ids

STORE = "5b7c2f1e-9a7d-4c41-9d4a-1f0e6c3b8a20"


def test_product_id_is_the_uuid5_of_store_and_provider_id() -> None:
    expected = uuid5(ids.NAMESPACE, f"product:{STORE}:p1")
    assert expected == UUID("adca3bd0-69f2-56fc-b843-03f86db9bb9b")  # stored streams depend on it
    for _ in range(2):  # derived, then remembered
        assert ids.product_id(STORE, "p1") == expected
        assert ids.product_id(UUID(STORE), "p1") == expected
    assert ids.product_id(STORE, "p2") != expected
    assert ids.product_id(STORE.replace("5b", "6b", 1), "p1") != expected


def test_remembered_ids_are_bounded() -> None:
    for n in range(ids.KEPT + 10):
        ids.product_id(STORE, f"many-{n}")
        ids.parsed(str(UUID(int=n)))
    assert ids.product_id.cache_info().currsize <= ids.KEPT
    assert ids.parsed.cache_info().currsize <= ids.KEPT
    assert ids.product_id(STORE, "many-0") == uuid5(ids.NAMESPACE, f"product:{STORE}:many-0")


def test_parsed_is_uuid_and_refuses_what_uuid_refuses() -> None:
    assert ids.parsed(STORE) == UUID(STORE)
    assert ids.parsed(STORE.upper()) == UUID(STORE)
    with pytest.raises(ValueError):
        ids.parsed("not-a-uuid")
    with pytest.raises(ValueError):  # still refused the second time (errors are not kept)
        ids.parsed("not-a-uuid")
