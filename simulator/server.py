"""`Simulator`: the control app and one app per store, each on its own loopback port.

All apps run in the caller's asyncio loop (one `AppRunner` each). Sockets are
bound before the apps are built so pages can carry absolute URLs.

    async with Simulator(stores=5, seed=1) as sim:
        sim.control_url, [s.base_url for s in sim.stores]
        sim.advance()
        sim.truth()
"""

from __future__ import annotations

import socket
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Self

from aiohttp import web

from simulator.catalog import Simulation, StoreSpec
from simulator.control_app import ControlApp
from simulator.faults import FaultConfig
from simulator.feeds import entry_url
from simulator.state import SimState
from simulator.store_app import StoreApp
from simulator.truth import RequestRecord

SHUTDOWN_TIMEOUT = 0.5


@dataclass(frozen=True)
class ServedStore:
    """A running store: its spec and where it is served."""

    spec: StoreSpec
    base_url: str
    entry_url: str

    @property
    def key(self) -> str:
        return self.spec.key

    @property
    def platform(self) -> str:
        return self.spec.platform


def bind(host: str, port: int) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
    except OSError:
        sock.close()
        raise
    return sock


def bind_after(host: str, port: int, tries: int = 200) -> socket.socket:
    """The first free port after `port` (or an ephemeral one if `port` is 0)."""
    if port == 0:
        return bind(host, 0)
    for candidate in range(port + 1, min(port + 1 + tries, 65536)):
        try:
            return bind(host, candidate)
        except OSError:
            continue
    return bind(host, 0)


class Simulator:
    """N fake stores over real HTTP on 127.0.0.1, with their ground truth."""

    def __init__(self, *, stores: int = 5, seed: int = 0, simulation: Simulation | None = None,
                 faults: FaultConfig | Mapping[str, Any] | None = None, fault_rate: float = 0.0,
                 robots: Mapping[str, str] | None = None, host: str = "127.0.0.1",
                 port: int = 0, epoch: int = 0, clock: Callable[[], float] = time.time) -> None:
        sim = simulation or Simulation(seed=seed, store_count=stores)
        config = FaultConfig.build(faults, rate=fault_rate)
        self.state = SimState(sim, config, robots or {}, clock, epoch)
        self.host, self.port = host, port
        self._runners: list[web.AppRunner] = []
        self._stores: tuple[ServedStore, ...] = ()

    @property
    def simulation(self) -> Simulation:
        return self.state.simulation

    @property
    def stores(self) -> tuple[ServedStore, ...]:
        return self._stores

    @property
    def control_url(self) -> str:
        return self.state.control_url

    @property
    def locator_url(self) -> str:
        return f"{self.control_url}/locator.json"

    @property
    def epoch(self) -> int:
        return self.state.epoch

    def set_epoch(self, epoch: int) -> int:
        return self.state.set_epoch(epoch)

    def advance(self) -> int:
        return self.state.advance()

    def truth(self, epoch: int | None = None) -> dict[str, Any]:
        return self.state.truth(epoch)

    def requests(self, store: str | None = None) -> tuple[RequestRecord, ...]:
        return self.state.log.requests(store)

    def faults_served(self) -> tuple[RequestRecord, ...]:
        return self.state.log.faults()

    def faulted_epochs(self) -> dict[str, tuple[int, ...]]:
        return self.state.log.faulted_epochs()

    def private_hits(self) -> tuple[RequestRecord, ...]:
        return self.state.log.private_hits()

    async def start(self) -> None:
        if self._runners:
            raise RuntimeError("simulator already started")
        sockets = self._bind_all()
        try:
            await self._serve(sockets)
        except BaseException:
            await self.stop()
            for sock in sockets.values():
                sock.close()
            raise

    def _bind_all(self) -> dict[str | None, socket.socket]:
        sockets: dict[str | None, socket.socket] = {None: bind(self.host, self.port)}
        last = sockets[None].getsockname()[1] if self.port else 0
        try:
            for spec in self.simulation.stores:
                sockets[spec.key] = bind_after(self.host, last)
                last = sockets[spec.key].getsockname()[1] if self.port else 0
        except OSError:
            for sock in sockets.values():
                sock.close()
            raise
        return sockets

    async def _serve(self, sockets: dict[str | None, socket.socket]) -> None:
        def url(sock: socket.socket) -> str:
            return f"http://{self.host}:{sock.getsockname()[1]}"

        self.state.control_url = url(sockets[None])
        specs = self.simulation.stores
        self.state.urls = {s.key: url(sockets[s.key]) for s in specs}
        self._stores = tuple(ServedStore(s, self.state.urls[s.key],
                                         entry_url(s, self.state.urls[s.key])) for s in specs)
        apps: dict[str | None, web.Application] = {None: ControlApp(self.state).build()}
        apps.update({s.key: StoreApp(self.state, s).build() for s in specs})
        for key, app in apps.items():
            runner = web.AppRunner(app, access_log=None, shutdown_timeout=SHUTDOWN_TIMEOUT)
            await runner.setup()
            self._runners.append(runner)
            await web.SockSite(runner, sockets[key]).start()

    async def stop(self) -> None:
        runners, self._runners = self._runners, []
        for runner in reversed(runners):
            await runner.cleanup()

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None,
                        exc: BaseException | None, tb: TracebackType | None) -> None:
        await self.stop()
