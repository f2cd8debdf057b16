"""Relay + Faust worker processes against Tansu, PostgreSQL and the store simulator."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from backends import LOOPBACK_ENV
from fleet import wait_for
from invariants import SETTLED, check, no_duplicate_effects, no_loss, rebuild_differences
from kafka_fixtures import KAFKA_WARNINGS, pg_store_url, read_topics, seed_stores, tansu_broker  # noqa: F401
from pg_server import private_postgres

from analytics import connect
from analytics.schema import DATASETS
from domain.envelope import Envelope
from ledger.bootstrap import Ledger, bootstrap
from ledger.drivers.demo import DEMO_START, DemoConfig, run_cycles, run_embedded_demo, seed_jobs
from ledger.drivers.distributed import Cluster, run_until_idle, wait_caught_up
from ledger.settings import Settings
from projections.datasets import DatasetWriter
from projections.framework import table_rows
from projections.runner import ProjectionRunner
from projections.search import index_faults
from runtime.clock import FileClock, SimulatedClock, SystemClock
from simulator import SimulatorThread
from streams.relay import Relay, kafka_producer
from streams.topics import PUBLIC_TOPICS, ensure_topics

pytestmark = [pytest.mark.postgres, pytest.mark.kafka, KAFKA_WARNINGS, pytest.mark.timeout(240)]


def cluster_settings(store: str, broker: str, data_dir: Path) -> Settings:
    return Settings.from_env({**LOOPBACK_ENV, "LEDGER_STORE": store, "LEDGER_BROKER": f"kafka://{broker}",
                              "LEDGER_DATA_DIR": str(data_dir),
                              "LEDGER_DEFAULT_CRAWL_DELAY": "0.02"})


@pytest.fixture
def dist_settings(pg_store_url: str, tansu_broker: str, tmp_path: Path) -> Settings:  # noqa: F811
    return cluster_settings(pg_store_url, tansu_broker, tmp_path / "dist")


@pytest.fixture
def dist(dist_settings: Settings) -> Iterator[Ledger]:
    ledger = bootstrap(dist_settings)
    try:
        yield ledger
    finally:
        ledger.close()


#: tables nothing in these runs fills (no alert is subscribed, no egress proxy added)
#: tables a run may leave empty: no alerts or proxies are set up, and a short run may see
#: no price move
UNUSED = frozenset({"alert_subscriptions", "alert_deliveries", "proxies", "product_changes"})


def assert_equal_to_rebuild(ledger: Ledger, may_be_empty: frozenset[str] = frozenset()) -> None:
    scratch = ledger.projections("scratch_")
    for projection in scratch:
        projection.drop(ledger.db)
    ProjectionRunner(ledger.source, ledger.db, scratch).catch_up()
    for projection in scratch:
        for table in projection.tables:
            live, rebuilt = (table_rows(ledger.db, table, p) for p in ("", "scratch_"))
            assert live == rebuilt, f"{table.name}: live read model differs from a rebuild"
            assert live or table.name in may_be_empty | UNUSED, f"{table.name} is empty"
            if table.search:  # an index is its table's rows, indexed: it must agree with them
                with ledger.db.transaction() as tx:
                    assert index_faults(tx, ledger.db.dialect, table.name) is None


def check_cluster(case: str, ledger: Ledger, before: list[Envelope]) -> list[Envelope]:
    """The fault table's invariants after a cluster run (`before`: the events stored
    before the fault); returns every stored event."""
    states = Counter(job["state"] for job in ledger.read.jobs())
    stored = ledger.source.read(0, 1_000_000)
    check(case, {
        "no_loss": lambda: no_loss(before, stored),
        "no_duplicate_effects": lambda: no_duplicate_effects(stored),
        "read_models_equal_rebuild": lambda: rebuild_differences(ledger),
        "jobs_settled": lambda: None if set(states) <= SETTLED else f"states {dict(states)}",
    })
    return stored


def commit_group_at(servers: list[str], group: str, offsets: dict[tuple[str, int], int]) -> int:
    """Commit `group`'s offsets at `offsets` (the relay's acknowledged ends): as if its consumer
    had taken every message and lost them before they reached the agent. Returns the skipped.

    (The relay's offsets, not `end_offsets`: Tansu answers ListOffsets with a wrong end.)"""
    from kafka import KafkaConsumer, TopicPartition
    from kafka.structs import OffsetAndMetadata

    consumer = KafkaConsumer(bootstrap_servers=servers, group_id=group, enable_auto_commit=False)
    try:
        ends = {TopicPartition(t, p): end for (t, p), end in offsets.items()}
        parts = list(ends)
        consumer.assign(parts)
        consumer.commit({tp: OffsetAndMetadata(end, "", -1) for tp, end in ends.items()})
        assert {tp: consumer.committed(tp) for tp in parts} == ends
        return sum(ends.values())
    finally:
        consumer.close()


def test_projector_reads_again_what_its_consumer_lost(dist: Ledger, dist_settings: Settings) -> None:
    """Messages the consumer lost (its group committed past them) are read again, not skipped."""
    servers = dist_settings.broker_servers
    ensure_topics(servers, 4)
    recorded = seed_stores(dist.app, 60, changes=3)
    relay = Relay(dist.source, dist.tables.relay_positions(), kafka_producer(servers))
    assert relay.catch_up() == recorded
    group = "crawl-ledger-project"
    published = dist.tables.relay_positions().offsets()
    assert commit_group_at(servers, group, published) == recorded
    args = ["--partitions", "4", "--stall-check", "0.5"]
    with Cluster(dist_settings, workers=[("project",)], worker_args=args, relay=False) as cluster:
        assert cluster.projector_group == group
        wait_caught_up(dist, group, 90)
    assert len(dist.read.stores()) == 60
    assert_equal_to_rebuild(dist, may_be_empty=frozenset({"job_status", "current_products", "stock_status",
                                                         "workers", "product_images",
                                                         "product_search", "extraction_jobs",
                                                         "store_extraction", "product_changes",
                                                         "changes_clock"}))  # no crawl role here


def parquet_rows(dataset_dir: Path) -> dict[str, list[tuple[Any, ...]]]:
    con = connect(dataset_dir)
    try:
        return {name: con.sql(f"SELECT * FROM {name} ORDER BY ALL").fetchall() for name in DATASETS}
    finally:
        con.close()


def images_settled(ledger: Ledger, killed_at: float) -> bool:
    """Whether every image still pending is claimed from before `killed_at` (by a worker
    killed mid-download: its claim outlives the test, so nothing will record it)."""
    pending = {r["image_url"] for r in ledger.read.pending_images(100_000)}
    abandoned = {r["url"] for r in ledger.db.query(
        "SELECT url, claimed_at FROM image_claims") if r["claimed_at"] < killed_at}
    return pending <= abandoned


def test_an_idle_crawl_worker_is_listed_in_the_registry(dist: Ledger,
                                                        dist_settings: Settings) -> None:
    """A crawl worker registers when it starts: with no job scheduled (no work item will
    come), the operator still sees it in the registry."""
    with Cluster(dist_settings, workers=[("crawl", "project")]):
        rows = wait_for(lambda: dist.read.workers(), "the idle worker registered", 60)
        assert dist.read.jobs() == []
    assert len(rows) == 1 and rows[0]["name"].startswith("faust:")


def test_kill_worker_and_relay_mid_run(dist: Ledger, dist_settings: Settings, tmp_path: Path) -> None:
    settings = dist_settings
    args = ["--lease-ttl", "6", "--tick", "0.3", "--redrive-after", "5", "--partitions", "4",
            "--datasets-every", "0.5"]
    with SimulatorThread(stores=3, seed=11) as sim, \
            Cluster(settings, workers=[("all",), ("all",)], worker_args=args,
                    supervise=True) as cluster:
        seed_jobs(dist, sim.urls.locator_url, sim.urls.control_url, SystemClock())
        group = cluster.projector_group
        wait_for(lambda: Counter(e.stream_type for e in dist.source.read(0, 100_000))["Product"],
                 "the first product events", 60)
        # both workers joined (each at its first work item) before one is killed: the
        # restarted one joins again only if work still comes its way
        wait_for(lambda: len(dist.read.workers()) >= 2, "both workers registered", 60)
        before = dist.source.read(0, 1_000_000)
        killed_at = time.time()
        cluster.kill("worker-1")
        cluster.kill("relay")
        # the cluster's supervisor restarts what crashed
        wait_for(lambda: cluster.restarts == {"worker-1": 1, "relay": 1}
                 and all(cluster.running().values()), "the crashed processes restarted", 30)
        run_until_idle(dist, group, SystemClock(), scheduler=False, timeout=150)
        # the image role downloads the products' images after their crawls: done when
        # no image is pending but those the killed worker had claimed (left to it until
        # the claim runs out, after the test): then no image event is still to come
        wait_for(lambda: images_settled(dist, killed_at), "the image role's downloads", 120)
        wait_caught_up(dist, group, 30)
        # the projecting leader keeps the analysts' Parquet datasets caught up too
        written = DatasetWriter(settings.data_dir, dist.source, dist.tables.dataset_manifests)
        wait_for(lambda: written.position() == dist.source.head(), "the Parquet datasets", 60)
        # compared while the cluster runs: the workers' departures, recorded as they stop
        # after their own projection agents, are projected by whichever projector runs next
        stored = check_cluster("worker (crawl+project) and relay kill -9 mid-run", dist, before)
        assert_equal_to_rebuild(dist)
        registered = {row["name"] for row in dist.read.workers()}
        assert len(registered) >= 2 and all(n.startswith("faust:") for n in registered)

    published = read_topics(settings.broker_servers, PUBLIC_TOPICS, len(stored))
    assert {e.event_id for e in stored} <= {env.event_id for _, _, env in published}
    clean = DatasetWriter(tmp_path / "clean", dist.source, dist.tables.dataset_manifests)
    clean.catch_up()
    assert parquet_rows(written.root) == parquet_rows(clean.root)
    assert parquet_rows(written.root)["price_observations"]


def product_events(ledger: Ledger) -> Counter[tuple[Any, ...]]:
    """Product facts that don't depend on ports or wall time."""
    envelopes = ledger.source.read(0, 1_000_000)
    provider = {e.stream_id: e.payload["provider_product_id"] for e in envelopes
                if e.event_type == "Product.Discovered"}
    facts: Counter[tuple[Any, ...]] = Counter()
    for env in envelopes:
        p = env.payload
        if env.event_type == "Product.PriceChanged":
            facts[(provider[env.stream_id], env.event_type, p["option"], p["old"], p["new"])] += 1
        elif env.event_type in ("Product.WentOutOfStock", "Product.BackInStock"):
            facts[(provider[env.stream_id], env.event_type)] += 1
    return facts


PRODUCT_COLUMNS = ("provider_product_id", "name", "brand", "category", "offers", "min_price",
                   "currency", "availability", "quantity", "in_stock", "consecutive_misses",
                   "observations", "price_changes")


def product_rows(ledger: Ledger) -> list[tuple[Any, ...]]:
    return sorted(tuple(str(r[c]) for c in PRODUCT_COLUMNS) for r in ledger.read.products())


def test_postgres_restart_under_the_distributed_workers(tansu_broker: str,  # noqa: F811
                                                        tmp_path: Path) -> None:
    """PostgreSQL (a private server) restarts under the relay and two workers with every
    role: their agents and timers wait for it, no process is restarted, nothing is lost
    and the read models equal a rebuild."""
    args = ["--lease-ttl", "6", "--tick", "0.3", "--redrive-after", "5", "--partitions", "4"]
    with private_postgres() as pg:
        settings = cluster_settings(f"{pg.url}?schema=dist", tansu_broker, tmp_path / "dist")
        ledger = bootstrap(settings)
        ledger.close()
        with SimulatorThread(stores=3, seed=11) as sim, \
                Cluster(settings, workers=[("all",), ("all",)], worker_args=args,
                        supervise=True) as cluster:
            ledger = bootstrap(settings)
            seed_jobs(ledger, sim.urls.locator_url, sim.urls.control_url, SystemClock())
            wait_for(lambda: Counter(e.stream_type for e in ledger.source.read(0, 100_000))
                     ["Product"], "the first product events", 60)
            before = ledger.source.read(0, 1_000_000)
            ledger.close()
            pg.ctl("-m", "fast", "restart")  # every connection of every process is cut
            ledger = bootstrap(settings)
            try:
                run_until_idle(ledger, cluster.projector_group, SystemClock(), scheduler=False,
                               timeout=150)
                wait_caught_up(ledger, cluster.projector_group, 60)
                check_cluster("PostgreSQL restart under the distributed workers", ledger, before)
                assert cluster.restarts == {}, f"processes restarted: {cluster.restarts}"
            finally:
                ledger.close()


def test_distributed_equals_embedded(dist: Ledger, dist_settings: Settings, tmp_path: Path) -> None:
    config = DemoConfig(stores=2, cycles=3, seed=5, fault_rate=0.0)
    embedded_settings = Settings.from_env({**LOOPBACK_ENV,
        "LEDGER_STORE": f"sqlite:///{tmp_path / 'emb' / 'ledger.sqlite'}",
        "LEDGER_DATA_DIR": str(tmp_path / "emb"), "LEDGER_DEFAULT_CRAWL_DELAY": "0.02"})
    embedded = run_embedded_demo(embedded_settings, config)
    try:
        embedded.catch_up()
        expected_events, expected_rows = product_events(embedded), product_rows(embedded)
    finally:
        embedded.close()
    assert expected_events and expected_rows

    clock, clock_file = SimulatedClock(DEMO_START), FileClock(tmp_path / "clock.txt")
    clock_file.set(clock.now())
    args = ["--no-timers", "--clock-file", str(clock_file.path), "--lease-ttl", "60"]
    with SimulatorThread(stores=config.stores, seed=config.seed) as sim, \
            Cluster(dist_settings, workers=[("all",), ("all",)], worker_args=args) as cluster:
        seed_jobs(dist, sim.urls.locator_url, sim.urls.control_url, clock)

        def until_idle() -> None:
            clock_file.set(clock.now())
            run_until_idle(dist, cluster.projector_group, clock, timeout=90)

        run_cycles(sim, clock, config, until_idle)
        assert_equal_to_rebuild(dist)  # while running: see test_kill_worker_and_relay_mid_run

    assert product_events(dist) == expected_events
    assert product_rows(dist) == expected_rows
