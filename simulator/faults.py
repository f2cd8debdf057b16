"""Which (store, epoch) pairs misbehave, and how — deterministic by seed.

A fault planned for a store at an epoch applies to every request to that store
during the epoch (except robots.txt), or only to the first `times` of them, so
a crawl of that store in that epoch fails. Configure per store, e.g.
`{"store-3": {"epochs": {2: "http_500"}, "times": 1}}`, and/or a default
`rate` (probability per store and epoch, drawn from `Random(seed:store:epoch:fault)`).
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

FAULT_KINDS = ("http_429", "http_500", "slow", "oversized", "truncated")


@dataclass(frozen=True)
class StoreFaults:
    """Faults forced for one store: epoch -> kind; `times` None = every request."""

    epochs: Mapping[int, str] = field(default_factory=dict)
    times: int | None = None


@dataclass(frozen=True)
class FaultConfig:
    """How the simulator misbehaves. Rate 0 and no per-store entries = never."""

    rate: float = 0.0
    kinds: tuple[str, ...] = FAULT_KINDS
    per_store: Mapping[str, StoreFaults] = field(default_factory=dict)
    retry_after: int = 1
    slow_seconds: float = 3.0
    oversized_bytes: int = 5 * 1024 * 1024
    #: with a rate, how many requests per faulty (store, epoch); None = all
    times: int | None = None

    def __post_init__(self) -> None:
        unknown = {k for k in self.kinds if k not in FAULT_KINDS}
        for spec in self.per_store.values():
            unknown |= {k for k in spec.epochs.values() if k not in FAULT_KINDS}
        if unknown:
            raise ValueError(f"unknown fault kinds {sorted(unknown)}; use {FAULT_KINDS}")
        if not 0.0 <= self.rate <= 1.0:
            raise ValueError("fault rate must be between 0 and 1")

    @classmethod
    def build(cls, faults: FaultConfig | Mapping[str, Any] | None = None,
              rate: float | None = None, **options: Any) -> FaultConfig:
        """From a `FaultConfig`, or the plain mapping form of `per_store`."""
        if isinstance(faults, FaultConfig):
            return faults
        per_store = {
            key: StoreFaults(
                epochs={int(e): str(k) for e, k in dict(spec.get("epochs", {})).items()},
                times=spec.get("times"),
            )
            for key, spec in dict(faults or {}).items()
        }
        return cls(rate=rate or 0.0, per_store=per_store, **options)


@dataclass(frozen=True)
class PlannedFault:
    store: str
    epoch: int
    kind: str
    times: int | None


def planned_fault(config: FaultConfig, seed: int, store: str, epoch: int) -> PlannedFault | None:
    """The fault (if any) for this store at this epoch; a pure function."""
    spec = config.per_store.get(store)
    if spec is not None and epoch in spec.epochs:
        return PlannedFault(store, epoch, spec.epochs[epoch], spec.times)
    if config.rate <= 0 or not config.kinds:
        return None
    rng = random.Random(f"{seed}:{store}:{epoch}:fault")
    if rng.random() >= config.rate:
        return None
    return PlannedFault(store, epoch, rng.choice(config.kinds), config.times)
