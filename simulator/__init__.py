"""A deterministic local store simulator for end-to-end crawl tests.

`Simulation` (pure catalog model, by seed/store/epoch), `Simulator` (aiohttp
servers on loopback, one port per store plus a control port), and
`SimulatorThread` (the same, on a background thread for synchronous callers).
"""

from __future__ import annotations

from simulator.catalog import PLATFORMS, Catalog, Product, Simulation, StoreSpec, Variant
from simulator.faults import FAULT_KINDS, FaultConfig, StoreFaults
from simulator.server import ServedStore, Simulator
from simulator.thread import SimulatorThread, SimulatorUrls
from simulator.truth import RequestRecord

__all__ = [
    "FAULT_KINDS",
    "PLATFORMS",
    "Catalog",
    "FaultConfig",
    "Product",
    "RequestRecord",
    "ServedStore",
    "Simulation",
    "Simulator",
    "SimulatorThread",
    "SimulatorUrls",
    "StoreFaults",
    "StoreSpec",
    "Variant",
]
