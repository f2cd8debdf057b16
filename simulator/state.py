"""The simulator's mutable state: the current epoch, URLs, the truth log.

Shared by the store apps and the control app (all in one event loop); the
epoch may be set from another thread (an int assignment under a lock).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import asdict
from typing import Any

from simulator.catalog import Catalog, Simulation
from simulator.faults import FaultConfig, PlannedFault, planned_fault
from simulator.feeds import feed_links
from simulator.truth import TruthLog, catalog_truth, record_json

DEFAULT_ROBOTS = "User-agent: *\nDisallow: /private/\n"


class SimState:
    """What every app of one simulator shares."""

    def __init__(self, simulation: Simulation, faults: FaultConfig,
                 robots: Mapping[str, str], clock: Callable[[], float], epoch: int = 0) -> None:
        self.simulation = simulation
        self.faults = faults
        self.robots = dict(robots)
        self.log = TruthLog(clock)
        self.urls: dict[str, str] = {}
        self.control_url = ""
        self._epoch = epoch
        self._lock = threading.Lock()

    @property
    def epoch(self) -> int:
        return self._epoch

    def set_epoch(self, epoch: int) -> int:
        if epoch < 0:
            raise ValueError("epoch must be >= 0")
        with self._lock:
            self._epoch = epoch
        return epoch

    def advance(self) -> int:
        with self._lock:
            self._epoch += 1
            return self._epoch

    def catalog(self, key: str, epoch: int) -> Catalog:
        return self.simulation.catalog(key, epoch)

    def robots_txt(self, key: str) -> str:
        return self.robots.get(key, DEFAULT_ROBOTS)

    def planned_fault(self, key: str, epoch: int) -> PlannedFault | None:
        return planned_fault(self.faults, self.simulation.seed, key, epoch)

    def claim_fault(self, key: str, epoch: int) -> PlannedFault | None:
        """The fault to inject into this request, counting it against `times`."""
        fault = self.planned_fault(key, epoch)
        if fault is None or not self.log.claim_fault(key, epoch, fault.times):
            return None
        return fault

    def truth(self, epoch: int | None = None) -> dict[str, Any]:
        """The ground-truth document (what `GET /__sim/truth?epoch=E` returns)."""
        at = self.epoch if epoch is None else epoch
        stores = {}
        for spec in self.simulation.stores:
            entry = catalog_truth(self.catalog(spec.key, at), self.urls.get(spec.key, ""))
            fault = self.planned_fault(spec.key, at)
            entry["planned_fault"] = asdict(fault) if fault else None
            stores[spec.key] = entry
        return {
            "seed": self.simulation.seed, "epoch": at, "current_epoch": self.epoch,
            "stores": stores,
            "feed_links": list(feed_links(self.simulation, self.urls, at)) if self.urls else [],
            "faults_served": [record_json(r) for r in self.log.faults()],
            "faulted_epochs": {k: list(v) for k, v in self.log.faulted_epochs().items()},
            "private_hits": len(self.log.private_hits()),
        }
