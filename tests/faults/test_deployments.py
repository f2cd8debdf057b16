"""Deployments sharing one broker stay apart: a deployment id namespaces topics and
consumer groups, and read models refuse envelopes stamped by another event store."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import backends
import pytest
from invariants import check, read_models_equal_rebuild
from kafka_fixtures import KAFKA_WARNINGS, read_topics, seed_stores, tansu_broker  # noqa: F401

from ledger.bootstrap import Ledger, bootstrap
from ledger.settings import ConfigError, Settings
from projections import read_models
from streams.app import app_id
from streams.kafka_projection import Consumed, apply_consumed
from streams.relay import Relay, kafka_producer
from streams.topics import Topics, ensure_topics

pytestmark = [pytest.mark.postgres, pytest.mark.kafka, KAFKA_WARNINGS]


@pytest.fixture
def two_ledgers(tmp_path: Path) -> Iterator[tuple[Ledger, Ledger]]:
    with backends.store_url("postgres", tmp_path / "a") as url_a, \
            backends.store_url("postgres", tmp_path / "b") as url_b, \
            backends.open_ledger(url_a, tmp_path / "a") as a, \
            backends.open_ledger(url_b, tmp_path / "b") as b:
        yield a, b


def relay_all(ledger: Ledger, servers: list[str], topics: Topics) -> None:
    ensure_topics(servers, 2, topics.all)
    relay = Relay(ledger.source, ledger.tables.relay_positions(), kafka_producer(servers),
                  ledger_id=ledger.identity, topics=topics)
    try:
        relay.catch_up()
    finally:
        relay.producer.close()


def test_the_identity_is_made_once_per_event_store(two_ledgers: tuple[Ledger, Ledger],
                                                   tmp_path: Path) -> None:
    a, b = two_ledgers
    assert a.identity != b.identity
    again = bootstrap(backends.settings_for(_url(a), tmp_path / "again"))
    try:
        assert again.identity == a.identity
    finally:
        again.close()


def test_deployment_ids_namespace_topics_and_groups() -> None:
    one, two = Topics("shop-a"), Topics("shop-b")
    assert not set(one.all) & set(two.all)
    assert one.crawl_jobs == "ledger.shop-a.crawl-jobs.v1"
    assert Topics().crawl_jobs == "ledger.crawl-jobs.v1"
    assert app_id(["all"], "shop-a") != app_id(["all"], "shop-b") != app_id(["all"])
    with pytest.raises(ConfigError):
        Settings.from_env({"LEDGER_DEPLOYMENT": "Shop A; DROP"})


def test_namespaced_deployments_do_not_see_each_others_events(
        two_ledgers: tuple[Ledger, Ledger], tansu_broker: str) -> None:  # noqa: F811
    a, b = two_ledgers
    servers = [tansu_broker]
    total_a, total_b = seed_stores(a.app, 5, changes=1), seed_stores(b.app, 7, changes=1)
    relay_all(a, servers, Topics("one"))
    relay_all(b, servers, Topics("two"))
    got_a = read_topics(servers, Topics("one").public, total_a)
    got_b = read_topics(servers, Topics("two").public, total_b)
    own_a = {env.event_id for env in a.source.read(0, 10_000)}
    own_b = {env.event_id for env in b.source.read(0, 10_000)}
    check("two deployments, own topics", {
        "no_loss": lambda: None if ({e.event_id for _, _, e in got_a} == own_a
                                    and {e.event_id for _, _, e in got_b} == own_b)
        else "a deployment's topics miss its events or carry the other's",
        "no_duplicate_effects": lambda: None if (
            {env.ledger_id for _, _, env in got_a} == {a.identity}
            and {env.ledger_id for _, _, env in got_b} == {b.identity}) else "mixed stamps",
    })


def test_read_models_refuse_another_event_stores_envelopes(
        two_ledgers: tuple[Ledger, Ledger], tansu_broker: str) -> None:  # noqa: F811
    """The careless case: two deployments without ids on one broker share the topics."""
    a, b = two_ledgers
    servers = [tansu_broker]
    total = seed_stores(a.app, 4, changes=1) + seed_stores(b.app, 6, changes=1, start=4)
    relay_all(a, servers, Topics())
    relay_all(b, servers, Topics())
    messages = read_topics(servers, Topics().public, total)
    assert len(messages) == total
    # every message on the stores topic, as one consumer would see them in one partition
    batch = [Consumed(topic, 0, offset, env) for offset, (topic, _, env) in enumerate(messages)]
    assert {m.topic for m in batch} == {Topics().stores}
    assert apply_consumed(a.db, a.tables.kafka_offsets, read_models(), "group", batch,
                          a.identity) == total
    stores = {row["store_id"] for row in a.read.stores()}
    own = {e.stream_id for e in a.source.read(0, 1000) if e.stream_type == "Store"}
    check("two deployments, shared topics", {
        "no_loss": lambda: None if own <= stores else "own stores missing",
        "no_duplicate_effects": lambda: None if stores <= own else "another store's rows applied",
        "read_models_equal_rebuild": lambda: read_models_equal_rebuild(a),
    })


def _url(ledger: Ledger) -> str:
    return ledger.backend.describe()
