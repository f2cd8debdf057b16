"""Injected faults over real HTTP, recorded in the truth; the async API and ports."""

from __future__ import annotations

import asyncio
import json
import socket
import time
from collections.abc import Iterator

import httpx
import pytest

from simulator import FaultConfig, Simulator, SimulatorThread

FAULTS = {
    "store-0": {"epochs": {1: "http_429"}},
    "store-1": {"epochs": {1: "http_500"}, "times": 1},
    "store-2": {"epochs": {2: "truncated"}},
    "store-3": {"epochs": {2: "oversized"}},
    "store-4": {"epochs": {3: "slow"}},
}


@pytest.fixture(scope="module")
def sim() -> Iterator[SimulatorThread]:
    config = FaultConfig.build(FAULTS, oversized_bytes=300_000, slow_seconds=0.3, retry_after=1)
    with SimulatorThread(stores=5, seed=1, faults=config) as running:
        yield running


@pytest.fixture
def client() -> Iterator[httpx.Client]:
    with httpx.Client(timeout=5) as c:
        yield c


def _catalog_url(sim: SimulatorThread, index: int) -> str:
    store = sim.urls.stores[index]
    return {
        "shopify": f"{store.base_url}/products.json?limit=50",
        "woocommerce": f"{store.base_url}/wp-json/wc/store/v1/products?per_page=50",
    }.get(store.platform, store.entry_url)


def test_faults_follow_the_plan_and_are_recorded(sim: SimulatorThread,
                                                 client: httpx.Client) -> None:
    sim.simulator.set_epoch(0)
    assert all(client.get(_catalog_url(sim, i)).status_code == 200 for i in range(5))
    sim.simulator.set_epoch(1)
    limited = client.get(_catalog_url(sim, 0))
    assert (limited.status_code, limited.headers["Retry-After"]) == (429, "1")
    assert client.get(f"{sim.urls.stores[0].base_url}/robots.txt").status_code == 200
    assert [client.get(_catalog_url(sim, 1)).status_code for _ in range(2)] == [500, 200]
    sim.simulator.set_epoch(2)
    truncated = client.get(_catalog_url(sim, 2))
    assert truncated.status_code == 200
    with pytest.raises(json.JSONDecodeError):
        json.loads(truncated.text)
    assert len(client.get(_catalog_url(sim, 3)).content) == 300_000
    sim.simulator.set_epoch(3)
    started = time.monotonic()
    slow = client.get(_catalog_url(sim, 4))
    assert slow.status_code == 200 and time.monotonic() - started >= 0.3
    assert "ItemList" in slow.text
    truth = client.get(f"{sim.urls.control_url}/__sim/truth", params={"epoch": 1}).json()
    assert truth["faulted_epochs"] == {"store-0": [1], "store-1": [1], "store-2": [2],
                                       "store-3": [2], "store-4": [3]}
    assert truth["stores"]["store-0"]["planned_fault"]["kind"] == "http_429"
    assert truth["stores"]["store-2"]["planned_fault"] is None
    kinds = [(f["store"], f["epoch"], f["fault"], f["status"]) for f in truth["faults_served"]]
    assert ("store-1", 1, "http_500", 500) in kinds and ("store-4", 3, "slow", 200) in kinds
    assert sim.simulator.faulted_epochs()["store-0"] == (1,)


def test_fault_rate_applies_to_every_store_and_epoch() -> None:
    config = FaultConfig(rate=1.0, kinds=("http_500",))
    with SimulatorThread(stores=2, seed=4, faults=config) as sim, httpx.Client() as client:
        for store in sim.urls.stores:
            assert client.get(store.entry_url).status_code == 500
            assert client.get(f"{store.base_url}/robots.txt").status_code == 200
        sim.simulator.advance()
        assert client.get(sim.urls.stores[0].entry_url).status_code == 500
        assert sim.simulator.faulted_epochs() == {"store-0": (0, 1), "store-1": (0,)}
        planned = sim.simulator.truth(5)["stores"]["store-1"]["planned_fault"]
        assert planned == {"store": "store-1", "epoch": 5, "kind": "http_500", "times": None}


def test_async_simulator_serves_in_the_callers_loop() -> None:
    async def scenario() -> list[str]:
        async with Simulator(stores=3, seed=2) as sim, httpx.AsyncClient() as client:
            located = (await client.get(sim.locator_url)).json()["stores"]
            sim.advance()
            return [s["platform"] for s in located] + [str(sim.truth()["epoch"])]

    assert asyncio.run(scenario()) == ["dispensary", "shopify", "woocommerce", "1"]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_fixed_control_port_and_following_store_ports() -> None:
    port = _free_port()
    with SimulatorThread(stores=2, seed=0, port=port) as sim:
        ports = [int(s.base_url.rsplit(":", 1)[1]) for s in sim.urls.stores]
        assert sim.urls.control_url == f"http://127.0.0.1:{port}"
        assert all(p > port for p in ports) and len(set(ports)) == 2
        with pytest.raises(OSError):
            asyncio.run(Simulator(stores=1, port=port).start())  # the port is taken


def test_thread_start_twice_is_refused_and_stop_is_idempotent() -> None:
    sim = SimulatorThread(stores=1)
    sim.start()
    try:
        with pytest.raises(RuntimeError):
            sim.start()
    finally:
        sim.stop()
    sim.stop()


def test_robots_rules_are_configurable_per_store() -> None:
    rules = {"store-1": "User-agent: *\nCrawl-delay: 2\nDisallow: /\n"}
    with SimulatorThread(stores=2, robots=rules) as sim, httpx.Client() as client:
        first, second = (client.get(f"{s.base_url}/robots.txt").text for s in sim.urls.stores)
        assert first == "User-agent: *\nDisallow: /private/\n"
        assert second == rules["store-1"]
