"""The simulator's catalog model and fault plan: pure, deterministic by seed."""

from __future__ import annotations

import itertools
from decimal import Decimal

import pytest

from simulator import PLATFORMS, FaultConfig, Simulation
from simulator.faults import planned_fault

EPOCHS = 40


def _history(sim: Simulation, key: str) -> list[dict[str, tuple[object, ...]]]:
    """Per epoch: provider id -> (listed, prices, specials, quantities)."""
    return [
        {p.provider_id: (p.listed, tuple(v.price for v in p.variants),
                         tuple(v.special_price for v in p.variants),
                         tuple(v.quantity for v in p.variants))
         for p in sim.catalog(key, epoch).products}
        for epoch in range(EPOCHS)
    ]


def test_same_seed_same_catalogs_different_seed_different() -> None:
    a, b, c = Simulation(seed=7), Simulation(seed=7), Simulation(seed=8)
    assert a.stores == b.stores
    for store in a.stores:
        assert a.catalog(store.key, 9) == b.catalog(store.key, 9)
    assert [a.catalog(s.key, 0) for s in a.stores] != [c.catalog(s.key, 0) for s in c.stores]


def test_catalog_does_not_depend_on_query_order() -> None:
    forward, backward = Simulation(seed=3), Simulation(seed=3)
    late = backward.catalog("store-2", 12)
    assert forward.catalog("store-2", 0) == backward.catalog("store-2", 0)
    assert forward.catalog("store-2", 12) == late


def test_every_platform_appears_round_robin() -> None:
    sim = Simulation(seed=1, store_count=7)
    assert [s.platform for s in sim.stores] == [*PLATFORMS, *PLATFORMS[:2]]
    assert len({s.key for s in sim.stores}) == len({s.platform_id for s in sim.stores}) == 7
    assert {s.currency for s in sim.stores} == {"USD", "EUR"}
    eur = [s for s in sim.stores if s.currency == "EUR"]
    assert [s.platform for s in eur] == ["jsonld"]


def test_epoch_zero_catalog_shape() -> None:
    sim = Simulation(seed=5)
    for store in sim.stores:
        catalog = sim.catalog(store.key, 0)
        assert 8 <= len(catalog.products) <= 20
        assert catalog.listed == catalog.products
        assert len({p.provider_id for p in catalog.products}) == len(catalog.products)
        assert len({p.handle for p in catalog.products}) == len(catalog.products)
        for product in catalog.products:
            assert 1 <= len(product.variants) <= 3
            for v in product.variants:
                assert isinstance(v.price, Decimal) and v.price.as_tuple().exponent == -2
                assert v.price > 0 and v.special_price is None


def test_options_fit_the_platform() -> None:
    sim = Simulation(seed=2)
    dispensary = {v.option for p in sim.catalog("store-0", 0).products for v in p.variants}
    shop = {v.option for p in sim.catalog("store-1", 0).products for v in p.variants}
    assert dispensary <= {"0.5g", "1g", "1/8oz", "1/4oz", "1/2oz", "100mg"}
    assert shop <= {"S", "M", "L", "default"}


def test_catalogs_change_over_epochs() -> None:
    sim = Simulation(seed=11)
    seen = {"price": False, "special_on": False, "special_off": False, "sold_out": False,
            "gone": False, "back": False, "new": False}
    for store in sim.stores:
        history = _history(sim, store.key)
        for before, after in itertools.pairwise(history):
            seen["new"] |= len(after) > len(before)
            for pid, (listed, prices, specials, qty) in before.items():
                a_listed, a_prices, a_specials, a_qty = after[pid]
                seen["price"] |= prices != a_prices
                seen["special_on"] |= any(s is None and t for s, t in zip(specials, a_specials))
                seen["special_off"] |= any(s and t is None for s, t in zip(specials, a_specials))
                seen["sold_out"] |= any(qty) and not any(a_qty)
                seen["gone"] |= listed and not a_listed
                seen["back"] |= not listed and a_listed
    assert all(seen.values()), seen


def test_hidden_products_come_back_within_three_epochs() -> None:
    sim = Simulation(seed=4)
    for store in sim.stores:
        for epoch in range(EPOCHS - 4):
            for product in sim.catalog(store.key, epoch).hidden:
                assert any(
                    product.provider_id in {p.provider_id for p in sim.catalog(store.key, e).listed}
                    for e in range(epoch + 1, epoch + 4)
                )


def test_specials_are_always_below_the_price() -> None:
    sim = Simulation(seed=9)
    for store in sim.stores:
        for epoch in range(0, EPOCHS, 3):
            for p in sim.catalog(store.key, epoch).products:
                assert all(v.special_price is None or v.on_sale for v in p.variants)


def test_negative_epoch_and_unknown_store_are_refused() -> None:
    sim = Simulation()
    with pytest.raises(ValueError):
        sim.catalog("store-0", -1)
    with pytest.raises(KeyError):
        sim.catalog("store-99", 0)


def test_faults_by_store_and_epoch() -> None:
    config = FaultConfig.build({"store-3": {"epochs": {2: "http_500"}, "times": 1}})
    fault = planned_fault(config, 0, "store-3", 2)
    assert fault is not None and (fault.kind, fault.times) == ("http_500", 1)
    assert planned_fault(config, 0, "store-3", 1) is None
    assert planned_fault(config, 0, "store-1", 2) is None


def test_fault_rate_is_deterministic() -> None:
    never, always = FaultConfig(), FaultConfig(rate=1.0, kinds=("http_429",))
    assert all(planned_fault(never, 1, "store-0", e) is None for e in range(50))
    assert all(planned_fault(always, 1, "store-0", e).kind == "http_429"  # type: ignore[union-attr]
               for e in range(50))
    half = FaultConfig(rate=0.3)
    plan = [planned_fault(half, 1, "store-2", e) for e in range(100)]
    assert plan == [planned_fault(half, 1, "store-2", e) for e in range(100)]
    assert 10 < sum(p is not None for p in plan) < 60


def test_bad_fault_config_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown fault kinds"):
        FaultConfig.build({"store-0": {"epochs": {1: "explode"}}})
    with pytest.raises(ValueError):
        FaultConfig(rate=2.0)
