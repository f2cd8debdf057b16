"""`SimulatorThread`: a `Simulator` in its own event loop on a background thread.

For synchronous callers (tests, the embedded demo):

    with SimulatorThread(stores=5, seed=1) as sim:
        urls = sim.urls                 # control URL + store base URLs
        sim.simulator.advance()
"""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import Future
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Self

from simulator.server import ServedStore, Simulator


@dataclass(frozen=True)
class SimulatorUrls:
    control_url: str
    locator_url: str
    stores: tuple[ServedStore, ...]


class SimulatorThread:
    """Runs `Simulator(**kwargs)` on a daemon thread; `start()` blocks until serving."""

    def __init__(self, simulator: Simulator | None = None, **kwargs: Any) -> None:
        self.simulator = simulator or Simulator(**kwargs)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    @property
    def urls(self) -> SimulatorUrls:
        sim = self.simulator
        return SimulatorUrls(sim.control_url, sim.locator_url, sim.stores)

    def start(self, timeout: float = 10.0) -> SimulatorUrls:
        if self._thread is not None:
            raise RuntimeError("simulator thread already started")
        started: Future[None] = Future()
        self._thread = threading.Thread(target=self._run, args=(started,),
                                        name="store-simulator", daemon=True)
        self._thread.start()
        try:
            started.result(timeout)
        except BaseException:
            self._thread.join(timeout)
            self._thread = None
            raise
        return self.urls

    def _run(self, started: Future[None]) -> None:
        loop = asyncio.new_event_loop()
        try:
            loop.run_until_complete(self.simulator.start())
        except BaseException as error:  # noqa: BLE001 - reported to start()'s caller
            loop.close()
            started.set_exception(error)
            return
        self._loop = loop
        started.set_result(None)
        try:
            loop.run_forever()
            loop.run_until_complete(self.simulator.stop())
            loop.run_until_complete(loop.shutdown_asyncgens())
        finally:
            loop.close()

    def stop(self, timeout: float = 10.0) -> None:
        loop, thread = self._loop, self._thread
        if loop is None or thread is None:
            return
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout)
        self._loop = self._thread = None

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None,
                 exc: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()
