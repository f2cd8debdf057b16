"""The distributed deployment on one machine: relay + Faust worker processes.

    with Cluster(settings, workers=[("all",), ("all",)]) as cluster:
        ...                                   # record commands
        wait_caught_up(ledger, cluster.projector_group)     # read models reflect them
        run_until_idle(ledger, cluster.projector_group, clock, scheduler=False)

For the demo's simulated clock, start the workers with
`worker_args=["--no-timers", "--clock-file", path]`, keep the file in step
(`runtime.clock.FileClock(path).set(clock.now())`) and let
`run_until_idle(..., scheduler=True)` tick the scheduler with that clock.

Each process is `crawl-ledger relay` / `crawl-ledger worker --role …` with
the same LEDGER_* environment; output goes to `<data dir>/logs/<name>.log`.
Stopping sends SIGTERM to the workers first (Faust commits and leaves its
group; each records its `Worker.Departed`), waits until the relay has
published everything up to the store's head (at most `drain_timeout`), then
stops the relay the same way; SIGKILL follows after `stop_timeout`.
"""

from __future__ import annotations

import logging
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from types import TracebackType

from ledger.settings import Settings
from runtime.clock import Clock
from runtime.ledger import Ledger
from runtime.scheduler import Scheduler

log = logging.getLogger(__name__)

def cli_command() -> list[str]:
    """How to start `crawl-ledger` with this interpreter."""
    script = Path(sys.executable).parent / "crawl-ledger"
    if script.is_file():
        return [str(script)]
    found = shutil.which("crawl-ledger")
    if found:
        return [found]
    return [sys.executable, "-c", "import sys; from ledger.cli import main; sys.exit(main())"]


def settings_env(settings: Settings) -> dict[str, str]:
    env = {"LEDGER_STORE": settings.store, "LEDGER_DATA_DIR": str(settings.data_dir),
           "LEDGER_USER_AGENT": settings.user_agent,
           "LEDGER_CATALOG_INTERVAL": str(settings.catalog_interval)}
    if settings.broker:
        env["LEDGER_BROKER"] = settings.broker
    if settings.default_crawl_delay is not None:
        env["LEDGER_DEFAULT_CRAWL_DELAY"] = str(settings.default_crawl_delay)
    if settings.deployment:
        env["LEDGER_DEPLOYMENT"] = settings.deployment
    if settings.allow_networks:
        env["LEDGER_ALLOW_NETWORKS"] = ",".join(settings.allow_networks)
    return env


@dataclass
class Managed:
    name: str
    args: list[str]
    process: subprocess.Popen[bytes] | None = None


@dataclass
class Cluster:
    """Starts the relay and one worker process per role set; stops them all."""

    settings: Settings
    workers: Sequence[Sequence[str]] = (("all",), ("all",))
    relay: bool = True
    worker_args: Sequence[str] = ()
    relay_args: Sequence[str] = ()
    stop_timeout: float = 15.0
    #: how long `stop` waits for the relay to publish the stopped workers' last events
    drain_timeout: float = 30.0
    extra_env: dict[str, str] = field(default_factory=dict)
    #: restart a process that exits on its own (a crashed relay or worker)
    supervise: bool = False
    processes: dict[str, Managed] = field(default_factory=dict, init=False)
    restarts: dict[str, int] = field(default_factory=dict, init=False)
    _added: int = field(default=0, init=False)
    _stopping: threading.Event = field(default_factory=threading.Event, init=False)
    _watcher: threading.Thread | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        if self.relay:
            self._add("relay", ["relay", "--quiet", *self.relay_args])
        for i, roles in enumerate(self.workers):
            role_args = [a for r in roles for a in ("--role", r)]
            self._add(f"worker-{i}", ["worker", *role_args, *self.worker_args])

    def _add(self, name: str, args: list[str]) -> None:
        self.processes[name] = Managed(name, args)

    def add_worker(self, roles: Sequence[str]) -> str:
        """Start one more worker process with `roles` in the running cluster (scale out);
        returns its name; `remove(name)` takes it out again."""
        name = f"worker-{len(self.workers) + self._added}"
        self._added += 1
        role_args = [a for r in roles for a in ("--role", r)]
        self._add(name, ["worker", *role_args, *self.worker_args])
        self.start_process(name)
        return name

    @property
    def projector_group(self) -> str:
        from streams.app import parse_roles, projector_group

        projecting = [r for r in self.workers if "project" in parse_roles(r)]
        if not projecting:
            raise ValueError("no worker has the project role")
        return projector_group(projecting[0], self.settings.deployment)

    @property
    def log_dir(self) -> Path:
        return Path(self.settings.data_dir) / "logs"

    def __enter__(self) -> Cluster:
        self.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()

    def start(self) -> None:
        from streams.topics import Topics, ensure_topics

        ensure_topics(self.settings.broker_servers, _partitions(self.worker_args),
                      Topics(self.settings.deployment).all)
        for name in self.processes:
            self.start_process(name)
        if self.supervise:
            self._watcher = threading.Thread(target=self._watch, name="cluster-supervisor",
                                             daemon=True)
            self._watcher.start()

    def _watch(self, every: float = 0.5) -> None:
        """Restart whatever exited on its own until the cluster stops."""
        while not self._stopping.wait(every):
            for name, managed in list(self.processes.items()):  # workers come and go
                if managed.process is None or managed.process.poll() is None:
                    continue
                if self._stopping.is_set():
                    return
                if name not in self.processes:  # removed meanwhile: not to be restarted
                    continue
                self.restarts[name] = self.restarts.get(name, 0) + 1
                log.warning("%s exited with %s: restarting it", name, managed.process.returncode)
                self.start_process(name)

    def start_process(self, name: str) -> None:
        managed = self.processes[name]
        if managed.process is not None and managed.process.poll() is None:
            raise RuntimeError(f"{name} is already running")
        self.log_dir.mkdir(parents=True, exist_ok=True)
        # libpq's application name: pg_stat_activity shows whose connection is whose
        env = os.environ | settings_env(self.settings) | self.extra_env | {
            "PGAPPNAME": f"crawl-ledger {name}"}
        with open(self.log_dir / f"{name}.log", "ab") as log:
            managed.process = subprocess.Popen([*cli_command(), *managed.args], env=env,
                                               stdout=log, stderr=subprocess.STDOUT,
                                               start_new_session=True)

    def kill(self, name: str, sig: int = signal.SIGKILL) -> None:
        """Send `sig` to one process (the fault tests use SIGKILL) and reap it."""
        process = self.processes[name].process
        if process is not None and process.poll() is None:
            process.send_signal(sig)
            process.wait(self.stop_timeout)

    def remove(self, name: str, sig: int = signal.SIGTERM) -> None:
        """Take one process out of the cluster (scale in): no longer supervised, sent
        `sig` (SIGTERM: it leaves its group; SIGKILL: it just dies) and reaped."""
        managed = self.processes.pop(name)
        process = managed.process
        if process is None or process.poll() is not None:
            return
        process.send_signal(sig)
        try:
            process.wait(self.stop_timeout)
        except subprocess.TimeoutExpired:
            process.send_signal(signal.SIGKILL)
            process.wait(5)

    def running(self) -> dict[str, bool]:
        return {n: m.process is not None and m.process.poll() is None
                for n, m in self.processes.items()}

    def stop(self) -> None:
        """Workers first, the relay last: the workers' final events (`Worker.Departed`)
        are recorded as they stop, and the relay publishes them before it is stopped."""
        self._stopping.set()
        if self._watcher is not None:
            self._watcher.join(5)
        self._terminate([n for n in self.processes if n != "relay"])
        if self.running().get("relay"):
            try:
                self.drain_relay(self.drain_timeout)
            except TimeoutError as late:  # stop anyway; the relay resumes from its position
                log.warning("%s", late)
        self._terminate(["relay"])

    def drain_relay(self, timeout: float, poll: float = 0.1) -> None:
        """Wait until the relay's acknowledged position is the store's head (or TimeoutError)."""
        from ledger.bootstrap import bootstrap
        from streams.relay import relay_status

        ledger = bootstrap(self.settings)
        try:
            positions = ledger.tables.relay_positions()
            deadline = time.monotonic() + timeout
            while (status := relay_status(ledger.source, positions))["lag"]:
                if time.monotonic() > deadline or not self.running().get("relay"):
                    raise TimeoutError(f"relay still {status['lag']} events behind the store's"
                                       f" head {status['head']} after {timeout}s")
                time.sleep(poll)
        finally:
            ledger.close()

    def _terminate(self, names: Sequence[str]) -> None:
        """SIGTERM these processes, wait for them together, SIGKILL what outlives `stop_timeout`."""
        alive = [m.process for n in names if (m := self.processes.get(n)) is not None
                 and m.process is not None and m.process.poll() is None]
        for process in alive:
            process.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + self.stop_timeout
        for process in alive:
            try:
                process.wait(max(deadline - time.monotonic(), 0.1))
            except subprocess.TimeoutExpired:
                process.send_signal(signal.SIGKILL)
                process.wait(5)


def _partitions(worker_args: Sequence[str]) -> int:
    from streams.topics import DEFAULT_PARTITIONS

    args = list(worker_args)
    if "--partitions" in args:
        return int(args[args.index("--partitions") + 1])
    return DEFAULT_PARTITIONS


def lag(ledger: Ledger, group: str, deployment: str = "") -> dict[str, int]:
    """How far the relay (events) and the projectors (messages) are behind; zeros = caught up.

    Projector lag compares the offsets the relay had acknowledged with the
    offsets applied with the rows, not with the broker's end offsets.
    """
    from streams.kafka_projection import projector_offsets
    from streams.relay import relay_status

    relay = relay_status(ledger.source, ledger.tables.relay_positions())
    from streams.topics import Topics

    applied, published = projector_offsets(ledger.tables, group, Topics(deployment))
    behind = sum(max(end - applied.get(tp, 0), 0) for tp, end in published.items())
    return {"relay": relay["lag"], "projectors": behind}


def wait_caught_up(ledger: Ledger, group: str, timeout: float = 60.0,
                   poll: float = 0.2, deployment: str = "") -> None:
    """Wait until the read models reflect everything in the event store (or TimeoutError)."""
    deadline = time.monotonic() + timeout
    while True:
        current = lag(ledger, group, deployment)
        if current == {"relay": 0, "projectors": 0}:
            return
        if time.monotonic() > deadline:
            raise TimeoutError(f"read models not caught up after {timeout}s: {current}")
        time.sleep(poll)


def idle(ledger: Ledger, now: datetime) -> bool:
    """Nothing due, dispatched or leased in the (caught-up) job-status read model."""
    counts = ledger.read.job_counts()
    return (not counts.get("dispatched") and not counts.get("leased")
            and not ledger.read.due_jobs(now, limit=1))


def run_until_idle(ledger: Ledger, group: str, clock: Clock, *, scheduler: bool = True,
                   timeout: float = 120.0, poll: float = 0.2, deployment: str = "") -> None:
    """Drive the cluster until idle: the demo's "run until idle" for the distributed path.

    With `scheduler=True` this process ticks the scheduler and reaps leases
    with `clock` (workers started with `--no-timers --clock-file …`, the
    file kept in step with `clock` by the caller); otherwise the workers'
    leader does it and this only waits.
    """
    deadline = time.monotonic() + timeout
    sched = Scheduler(ledger, slot_size=64)
    while True:
        wait_caught_up(ledger, group, max(deadline - time.monotonic(), 1.0),
                       deployment=deployment)
        now = clock.now()
        dispatched = sched.tick(now) if scheduler else []
        if scheduler:
            sched.reap(now)
        if not dispatched and idle(ledger, now):
            return
        if time.monotonic() > deadline:
            raise TimeoutError(f"not idle after {timeout}s: {ledger.read.job_counts()}")
        time.sleep(poll)
