"""`crawl-ledger demo`: the whole system against the store simulator, in one command.

The simulator serves N stores on loopback; one store-locator job and three
feed jobs are scheduled, and everything else is found through the real
chain (locator -> stores -> entry points -> catalogs; feeds -> product pages).
Each cycle sets the simulator's epoch (its catalogs change: prices, specials,
products vanishing and coming back), runs the crawl until idle, and moves the
simulated clock on by one catalog interval.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from ledger.bootstrap import Ledger, bootstrap, runner_crawler
from ledger.drivers.embedded import EmbeddedRunner, RunStats, run_loop
from ledger.host.in_use import refuse_if_used
from ledger.settings import ConfigError, Settings, parse_postgres
from runtime.clock import SimulatedClock
from simulator import FaultConfig, SimulatorThread

#: the simulated clock's start when a caller names none (tests pin it for fixed dates)
DEMO_START = datetime(2026, 1, 5, 8, 0, tzinfo=UTC)
DEMO_SCHEMA = "crawl_ledger_demo"
MARKER = ".crawl-ledger-demo"


@dataclass(frozen=True)
class DemoConfig:
    stores: int = 6
    cycles: int = 8
    seed: int = 7
    fault_rate: float = 0.08
    concurrency: int = 8
    cycle_seconds: int = 4 * 3600
    crawl_delay: float = 0.02  # the simulator is ours: no need to wait a second between pages
    start: datetime = DEMO_START

    @property
    def end(self) -> datetime:
        """The simulated clock after the last cycle (one interval after its crawl)."""
        return self.start + timedelta(seconds=self.cycles * self.cycle_seconds)


def start_ending_now(config: DemoConfig, now: datetime | None = None) -> datetime:
    """The start that ends the demo's simulated clock at `now` (the wall clock by default).

    `crawl-ledger demo` uses it, so the dashboard served right after shows the history
    ending at the moment the demo finished rather than months ago.
    """
    wall = (now or datetime.now(UTC)).replace(microsecond=0)
    return wall - timedelta(seconds=config.cycles * config.cycle_seconds)


def demo_settings(base: Settings, config: DemoConfig, store: str | None = None,
                  broker: str | None = None) -> Settings:
    """A fresh data dir (and PostgreSQL schema) for the demo; only ever deletes a demo's own."""
    if store is not None and store.startswith(("postgresql://", "postgres://")):
        store = fresh_demo_schema(store)
    data_dir = base.data_dir / "demo"
    if data_dir.exists():
        if not (data_dir / MARKER).exists():
            raise FileExistsError(f"{data_dir} exists and is not a crawl-ledger demo dir")
        refuse_if_used(data_dir)
        shutil.rmtree(data_dir)
    data_dir.mkdir(parents=True)
    (data_dir / MARKER).write_text("created by crawl-ledger demo; safe to delete\n")
    settings = replace(
        base, data_dir=data_dir, broker=broker or base.broker,
        store=store or f"sqlite:///{(data_dir / 'ledger.sqlite').resolve()}",
        catalog_interval=config.cycle_seconds, default_crawl_delay=config.crawl_delay,
    )
    settings.validate()
    return settings


def fresh_demo_schema(store: str) -> str:
    """Without `?schema=`, the demo uses (and first drops) its own schema `crawl_ledger_demo`;
    a schema the user names must not hold tables yet."""
    from eventstore.admin import drop_schemas, table_count

    pg = parse_postgres(store)
    named = pg.schema != "public"
    schema = pg.schema if named else DEMO_SCHEMA
    schemas = (schema, f"{schema}_read")
    if named and table_count(pg.conninfo, schemas):
        raise ConfigError(f"schema {schema} is not empty; the demo needs a fresh one")
    if not named:
        drop_schemas(pg.conninfo, schemas)
    return urlunsplit(urlsplit(store)._replace(query=f"schema={schema}"))


def seed_jobs(ledger: Ledger, locator_url: str, control_url: str, clock: SimulatedClock) -> None:
    """The only jobs an operator schedules; the chain discovers the rest."""
    now = clock.now()
    ledger.app.schedule_job(kind="store_discovery", url=locator_url, every=86400, now=now)
    for feed in ("rss.xml", "atom.xml", "social.json"):
        ledger.app.schedule_job(kind="feed", url=f"{control_url}/feeds/{feed}",
                                every=4 * 3600, now=now)


def run_cycles(simulator: SimulatorThread, clock: SimulatedClock, config: DemoConfig,
               run_until_idle: Callable[[], None],
               on_cycle: Callable[[int], None] = lambda c: None) -> None:
    """Cycle c: the simulator shows epoch c; crawl until idle; advance the clock."""
    for cycle in range(config.cycles):
        simulator.simulator.set_epoch(cycle)
        on_cycle(cycle)
        run_until_idle()
        clock.advance(config.cycle_seconds)


def demo_faults(config: DemoConfig) -> FaultConfig:
    return FaultConfig(rate=config.fault_rate, kinds=("http_429", "http_500"))


#: the simulator listens on loopback, which the SSRF guard refuses unless allowed
LOOPBACK = ("127.0.0.0/8", "::1/128")


def allow_simulator(settings: Settings) -> Settings:
    """`settings` with loopback allowed on purpose, for crawling the local simulator."""
    allowed = tuple(dict.fromkeys((*settings.allow_networks, *LOOPBACK)))
    return replace(settings, allow_networks=allowed)


def run_distributed_demo(settings: Settings, config: DemoConfig,
                         on_cycle: Callable[[int], None] = lambda c: None) -> Ledger:
    """The same demo through the relay and two Faust worker processes (PostgreSQL + Kafka).

    The workers read the simulated time from a clock file this process keeps in
    step; this process ticks the scheduler (workers run with `--no-timers`).
    """
    from ledger.drivers.distributed import Cluster, run_until_idle
    from runtime.clock import FileClock

    settings = allow_simulator(settings)
    clock = SimulatedClock(config.start)
    clock_file = FileClock(settings.data_dir / "clock.txt")
    clock_file.set(clock.now())
    ledger = bootstrap(settings)
    args = ["--no-timers", "--clock-file", str(clock_file.path)]
    with SimulatorThread(stores=config.stores, seed=config.seed, faults=demo_faults(config)) \
            as sim, Cluster(settings, workers=[("all",), ("all",)], worker_args=args,
                            supervise=True) as cluster:
        seed_jobs(ledger, sim.urls.locator_url, sim.urls.control_url, clock)

        def until_idle() -> None:
            clock_file.set(clock.now())
            run_until_idle(ledger, cluster.projector_group, clock, timeout=300,
                           deployment=settings.deployment)

        run_cycles(sim, clock, config, until_idle, on_cycle)
    return ledger


def run_embedded_demo(settings: Settings, config: DemoConfig,
                      on_change: Callable[[RunStats], None] = lambda s: None,
                      on_cycle: Callable[[int], None] = lambda c: None) -> Ledger:
    """Run the demo on the embedded runner; returns the (open) ledger for reporting."""
    settings = allow_simulator(settings)
    clock = SimulatedClock(config.start)
    ledger = bootstrap(settings)
    with SimulatorThread(stores=config.stores, seed=config.seed, faults=demo_faults(config)) \
            as sim:
        seed_jobs(ledger, sim.urls.locator_url, sim.urls.control_url, clock)
        total = RunStats()

        def until_idle() -> None:
            stats = run_loop(_run_once(ledger, settings, clock, config, on_change, total))
            _accumulate(total, stats)

        run_cycles(sim, clock, config, until_idle, on_cycle)
    return ledger


async def _run_once(ledger: Ledger, settings: Settings, clock: SimulatedClock,
                    config: DemoConfig, on_change: Callable[[RunStats], None],
                    total: RunStats) -> RunStats:
    async with runner_crawler(settings) as crawler:  # as `crawl-ledger run` crawls
        runner = EmbeddedRunner(ledger, crawler, clock, concurrency=config.concurrency,
                                tick_seconds=0.2, images=crawler,
                                on_change=lambda s: on_change(_combined(total, s)))
        return await runner.run(until_idle=True)


def _combined(total: RunStats, current: RunStats) -> RunStats:
    merged = RunStats(**{k: v for k, v in vars(total).items() if k != "failures"})
    merged.failures = total.failures.copy()
    _accumulate(merged, current)
    merged.in_flight, merged.queued = current.in_flight, current.queued
    return merged


def _accumulate(total: RunStats, stats: RunStats) -> None:
    for name in ("dispatched", "succeeded", "failed", "events", "products_seen", "reaped",
                 "images_stored", "images_failed"):
        setattr(total, name, getattr(total, name) + getattr(stats, name))
    total.failures.update(stats.failures)


def chart_path(data_dir: Path, output: str | None) -> Path:
    return Path(output) if output else data_dir / "price-history.png"
