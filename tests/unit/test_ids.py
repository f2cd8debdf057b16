"""Deterministic ids: the same inputs give the same stream, as `uuid.uuid5` derives it."""

from __future__ import annotations

import uuid
from uuid import UUID

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from domain import ids

STORE = "5b7c2f1e-9a7d-4c41-9d4a-1f0e6c3b8a20"


def test_product_id_is_pinned() -> None:
    # stored streams depend on it: the same store and provider id, the same product
    assert ids.product_id(STORE, "p1") == UUID("adca3bd0-69f2-56fc-b843-03f86db9bb9b")
    assert ids.product_id(UUID(STORE), "p1") == ids.product_id(STORE, "p1")
    assert ids.product_id(STORE, "p2") != ids.product_id(STORE, "p1")


@settings(max_examples=500, deadline=None)
@given(name=st.text(), namespace=st.sampled_from([ids.NAMESPACE, uuid.NAMESPACE_URL,
                                                   UUID(int=0), UUID(int=2**128 - 1)]))
def test_uuid5_is_the_standard_librarys(name: str, namespace: UUID) -> None:
    try:
        expected = uuid.uuid5(namespace, name)
    except UnicodeEncodeError:  # a lone surrogate: refused alike
        with pytest.raises(UnicodeEncodeError):
            ids.uuid5(namespace, name)
        return
    got = ids.uuid5(namespace, name)
    assert got == expected
    assert (got.version, got.variant, str(got)) == (5, uuid.RFC_4122, str(expected))


def test_every_derived_id_is_the_standard_librarys() -> None:
    ns = ids.NAMESPACE
    assert ids.store_id(" https://Shop.example/ ") == uuid.uuid5(ns, "store:https://shop.example")
    assert ids.job_id("catalog", "https://s.example/p") == uuid.uuid5(ns, "job:catalog:https://s.example/p")
    assert ids.product_id(STORE, "ü-1") == uuid.uuid5(ns, f"product:{STORE}:ü-1")
    assert ids.worker_id("w") == uuid.uuid5(ns, "worker:w")
    assert ids.delivery_id(STORE, "e:1") == uuid.uuid5(ns, f"delivery:{STORE}:e:1")
    assert ids.proxy_id("HTTP://P:1") == uuid.uuid5(ns, "proxy:http://p:1")
