"""The side-table port's contract, on both backends: every operation of every family
behaves the same on SQLite and PostgreSQL; `bootstrap` creates the tables (constructors
do not), twice is a no-op, and a read-model database whose side tables were created
the old way (one constructor each) upgrades without losing a row."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import backends

from eventstore.database import Database, SQLiteDatabase
from eventstore.side_tables import (
    SIDE_TABLES,
    SideTables,
    StoredManifest,
    StoredSession,
    Token,
    create_side_tables,
)
from ledger.bootstrap import Ledger

T0 = datetime(2026, 11, 1, 8, 0, tzinfo=UTC)


def test_tokens(ledger: Ledger) -> None:
    tokens = ledger.tables.tokens
    assert not tokens.any_live()
    first = Token("t1", "ops", "operate", "2026-11-01T08:00:00+00:00")
    second = Token("t2", "bot", "bot", "2026-11-01T09:00:00+00:00")
    tokens.insert(second, "digest-2")
    tokens.insert(first, "digest-1")
    assert tokens.live("digest-1") == first and tokens.live("nope") is None
    assert tokens.all() == [first, second]  # oldest first
    assert tokens.any_live()
    assert tokens.revoke("t1", "2026-11-02T00:00:00+00:00") is True
    assert tokens.revoke("t1", "2026-11-03T00:00:00+00:00") is False  # already revoked
    assert tokens.revoke("t9", "2026-11-03T00:00:00+00:00") is False  # no such token
    assert tokens.live("digest-1") is None
    assert tokens.all()[0].revoked_at == "2026-11-02T00:00:00+00:00"
    assert tokens.revoke("t2", "2026-11-02T00:00:00+00:00") and not tokens.any_live()


def test_sessions(ledger: Ledger) -> None:
    sessions = ledger.tables.sessions
    assert sessions.get("k1") is None and sessions.take_flash("k1") == {}
    sessions.open("k1", "token-digest", "csrf-1", 1000.0)
    sessions.open("k2", "token-digest", "csrf-2", 2000.0)
    assert sessions.get("k1") == StoredSession("token-digest", "csrf-1", 1000.0, {})
    sessions.touch("k1", 1500.0)
    sessions.touch("k1", 1200.0)  # never back
    assert sessions.get("k1").used_at == 1500.0  # type: ignore[union-attr]
    sessions.put_flash("k1", {"job-1": "pause: done"})
    assert sessions.get("k1").flash == {"job-1": "pause: done"}  # type: ignore[union-attr]
    assert sessions.take_flash("k1") == {"job-1": "pause: done"}
    assert sessions.take_flash("k1") == {}  # shown once
    assert sessions.take_flash("k2") == {}
    assert sessions.forget_idle(1800.0) == 1  # k1, last used at 1500
    assert sessions.get("k1") is None and sessions.get("k2") is not None
    sessions.close("k2")
    sessions.close("k2")  # closing twice is no error
    assert sessions.get("k2") is None


def test_dataset_manifests(ledger: Ledger) -> None:
    manifests = ledger.tables.dataset_manifests
    assert manifests.load("d1") is None
    manifests.save("d1", 5, '{"format":3}')
    manifests.save("d2", 1, "{}")
    manifests.save("d1", 9, '{"format":3,"stores":{}}')  # replaced
    assert manifests.load("d1") == StoredManifest(9, '{"format":3,"stores":{}}')
    manifests.forget("d1")
    manifests.forget("d1")  # forgetting twice is no error
    assert manifests.load("d1") is None and manifests.load("d2") == StoredManifest(1, "{}")


def test_image_claims(ledger: Ledger) -> None:
    mine, theirs = ledger.tables.claims(ttl=60), ledger.tables.claims(ttl=60)
    first = mine.claim(["u/b", "u/a", "u/a"], T0)
    assert first.urls == {"u/a", "u/b"}
    second = theirs.claim(["u/a", "u/c"], T0 + timedelta(seconds=30))
    assert second.urls == {"u/c"}  # u/a is held and its claim has not run out
    later = theirs.claim(["u/a"], T0 + timedelta(seconds=61))
    assert later.urls == {"u/a"}  # the holder's claim ran out: taken over
    mine.release(first)  # gives back u/b; u/a is no longer its own
    assert ledger.tables.image_claims.held() == {"u/a": later.token, "u/c": second.token}


def test_alert_channels_and_positions(ledger: Ledger) -> None:
    channels = ledger.tables.alert_channels
    assert channels.get("s1") is None
    channels.put("s1", "webhook", "https://example.test/hook", "secret")
    channels.put("s1", "apprise", "tgram://token/chat", None)  # replaced
    channels.put("s2", "webhook", "https://example.test/two", "other")
    assert channels.get("s1") == ("apprise", "tgram://token/chat", None)
    channels.delete("s1")
    assert channels.get("s1") is None
    assert channels.get("s2") == ("webhook", "https://example.test/two", "other")
    assert channels.position("alerts") == 0
    channels.move("alerts", 41)
    channels.move("alerts", 42)
    assert (channels.position("alerts"), channels.position("other")) == (42, 0)


def test_proxies(ledger: Ledger) -> None:
    proxies = ledger.tables.proxies
    proxies.put_url("p1", "http://user:pw@203.0.113.1:3128")
    proxies.put_url("p1", "http://user:new@203.0.113.1:3128")
    proxies.put_url("p2", "http://203.0.113.2:3128")
    assert proxies.urls() == {"p1": "http://user:new@203.0.113.1:3128",
                              "p2": "http://203.0.113.2:3128"}
    proxies.save_health([("p1", 3, 1, 1, 0.25), ("p2", 0, 4, 4, None)])
    proxies.save_health([("p1", 4, 1, 0, 0.5)])
    health = proxies.health()
    assert {k: v for k, v in health["p1"].items()} == {
        "proxy_id": "p1", "successes": 4, "failures": 1, "consecutive_failures": 0,
        "latency": 0.5}
    assert health["p2"]["latency"] is None and health["p2"]["failures"] == 4


def test_heartbeats_and_worker_owners(ledger: Ledger) -> None:
    beats = ledger.tables.heartbeats
    beats.put("w1", T0, 3, 1000, 1.5)
    beats.put("w1", T0 + timedelta(seconds=10), 2, 2000, 2.25)  # replaces the row
    beats.put("w2", T0, 0, 10, 0.0)
    latest = beats.latest()
    assert set(latest) == {"w1", "w2"}
    assert (latest["w1"]["at"], latest["w1"]["in_flight"], latest["w1"]["rss_bytes"],
            latest["w1"]["cpu_seconds"]) == ("2026-11-01T08:00:10.000000Z", 2, 2000, 2.25)
    owners = ledger.tables.worker_owners
    assert not owners.owns("bot-1", "tok-a")  # nobody's yet
    assert owners.claim("bot-1", "tok-a") and owners.claim("bot-1", "tok-a")
    assert not owners.claim("bot-1", "tok-b")  # the first token keeps it
    assert owners.owns("bot-1", "tok-a") and not owners.owns("bot-1", "tok-b")


def test_relay_positions(ledger: Ledger) -> None:
    relay, bench = ledger.tables.relay_positions(), ledger.tables.relay_positions("bench")
    assert (relay.load().position, relay.load().gaps, relay.offsets(), relay.gaps()) == (0, 0, {}, [])
    relay.save(10, [4, 7], "2026-11-01T08:00:00Z", {("ledger.stores.v1", 0): 5})
    relay.save(20, [7, 15], "2026-11-01T08:01:00Z",
               {("ledger.stores.v1", 0): 3, ("ledger.stores.v1", 1): 9})
    assert (relay.load().position, relay.load().gaps) == (20, 4)  # every gap reported counts
    assert relay.gaps() == [4, 7, 15]  # each once
    # an acknowledged offset never goes back (a late acknowledgement of an older batch)
    assert relay.offsets() == {("ledger.stores.v1", 0): 5, ("ledger.stores.v1", 1): 9}
    assert (bench.load().position, bench.offsets()) == (0, {})  # one row set per name


def test_kafka_offsets(ledger: Ledger) -> None:
    offsets, db = ledger.tables.kafka_offsets, ledger.db
    assert offsets.stored("group") == {}
    parts = [("ledger.products.v1", 0), ("ledger.stores.v1", 2)]
    with db.transaction() as tx:
        assert offsets.lock(tx, "group", parts) == {parts[0]: 0, parts[1]: 0}
        offsets.advance(tx, "group", {parts[0]: 12})
    with db.transaction() as tx:
        assert offsets.lock(tx, "group", parts) == {parts[0]: 12, parts[1]: 0}
    assert offsets.stored("group") == {parts[0]: 12, parts[1]: 0}
    assert offsets.stored("other") == {}
    try:  # a failed transaction keeps neither the new rows nor the advance
        with db.transaction() as tx:
            offsets.lock(tx, "other", parts)
            offsets.advance(tx, "other", {parts[0]: 99})
            raise RuntimeError("the projection failed")
    except RuntimeError:
        pass
    assert offsets.stored("other") == {}


def fill(tables: SideTables) -> None:
    tables.tokens.insert(Token("t1", "ops", "admin", "2026-11-01T08:00:00+00:00"), "d1")
    if "dashboard_sessions" in tables.db.table_names():  # none in a store made the old way
        tables.sessions.open("k1", "d1", "csrf", 1000.0)
    tables.image_claims.claim(["u/a"], T0)
    tables.alert_channels.put("s1", "webhook", "https://example.test/hook", "k")
    tables.alert_channels.move("alerts", 7)
    tables.proxies.put_url("p1", "http://203.0.113.1:3128")
    tables.proxies.save_health([("p1", 1, 2, 0, 0.1)])
    tables.heartbeats.put("w1", T0, 1, 100, 0.5)
    tables.worker_owners.claim("bot-1", "t1")
    tables.relay_positions().save(5, [3], "2026-11-01T08:00:00Z", {("ledger.stores.v1", 0): 4})
    with tables.db.transaction() as tx:
        tables.kafka_offsets.lock(tx, "group", [("ledger.stores.v1", 0)])
        tables.kafka_offsets.advance(tx, "group", {("ledger.stores.v1", 0): 4})


def contents(tables: SideTables) -> dict[str, Any]:
    relay = tables.relay_positions()
    made = "dashboard_sessions" in tables.db.table_names()
    return {"tokens": tables.tokens.all(), "session": tables.sessions.get("k1") if made else None,
            "claims": sorted(tables.image_claims.held()),
            "channel": tables.alert_channels.get("s1"),
            "alert position": tables.alert_channels.position("alerts"),
            "proxies": (tables.proxies.urls(), tables.proxies.health()),
            "heartbeats": tables.heartbeats.latest(),
            "owner": tables.worker_owners.owns("bot-1", "t1"),
            "relay": (relay.load(), relay.gaps(), relay.offsets()),
            "kafka": tables.kafka_offsets.stored("group")}


def test_bootstrap_creates_them_constructors_do_not_and_twice_changes_nothing(
        store_url: str, tmp_path: Path) -> None:
    bare = SQLiteDatabase(tmp_path / "bare.sqlite")
    try:
        SideTables(bare)  # an adapter only: no table
        assert bare.table_names() == set()
        create_side_tables(bare)
        create_side_tables(bare)
        assert bare.table_names() == set(SIDE_TABLES)
    finally:
        bare.close()
    with backends.open_ledger(store_url, tmp_path) as ledger:
        assert set(SIDE_TABLES) <= ledger.db.table_names()
        fill(ledger.tables)
        before = contents(ledger.tables)
        tables = ledger.db.table_names()
    with backends.open_ledger(store_url, tmp_path) as again:  # bootstrap a second time
        assert again.db.table_names() == tables
        assert contents(again.tables) == before
        assert before["owner"] and before["channel"] is not None  # what was filled is there
        assert before["session"] is not None


#: the side tables as each store's constructor created them before `create_side_tables`
#: (PostgreSQL types for `{text}`, `{num}`, `{real}`; SQLite's are TEXT, INTEGER, REAL)
OLD_DDL = [
    "CREATE TABLE IF NOT EXISTS api_tokens (token_id TEXT PRIMARY KEY, digest TEXT NOT NULL "
    "UNIQUE, name TEXT NOT NULL, scope TEXT NOT NULL, created_at TEXT NOT NULL, revoked_at TEXT)",
    "CREATE TABLE IF NOT EXISTS image_claims (url {text} PRIMARY KEY, owner {text} NOT NULL, "
    "claimed_at {real} NOT NULL)",
    "CREATE TABLE IF NOT EXISTS alert_channels (subscription_id {text} PRIMARY KEY, "
    "kind {text} NOT NULL, url {text} NOT NULL, secret {text})",
    "CREATE TABLE IF NOT EXISTS alert_positions (name {text} PRIMARY KEY, position {num} NOT NULL)",
    "CREATE TABLE IF NOT EXISTS proxy_urls (proxy_id {text} PRIMARY KEY, url {text} NOT NULL)",
    "CREATE TABLE IF NOT EXISTS proxy_health (proxy_id {text} PRIMARY KEY, successes {num} NOT "
    "NULL, failures {num} NOT NULL, consecutive_failures {num} NOT NULL, latency {real})",
    "CREATE TABLE IF NOT EXISTS worker_heartbeats (name TEXT PRIMARY KEY, at TEXT NOT NULL, "
    "in_flight INTEGER, rss_bytes INTEGER, cpu_seconds REAL)",
    "CREATE TABLE IF NOT EXISTS worker_owners (name TEXT PRIMARY KEY, token_id TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS relay_position (name {text} PRIMARY KEY, position {num} NOT NULL, "
    "gaps {num} NOT NULL)",
    "CREATE TABLE IF NOT EXISTS relay_gaps (name {text} NOT NULL, position {num} NOT NULL, "
    "recorded_at {text} NOT NULL, PRIMARY KEY (name, position))",
    "CREATE TABLE IF NOT EXISTS relay_offsets (name {text} NOT NULL, topic {text} NOT NULL, "
    "part {num} NOT NULL, next_offset {num} NOT NULL, PRIMARY KEY (name, topic, part))",
    "CREATE TABLE IF NOT EXISTS kafka_offsets (consumer {text} NOT NULL, topic {text} NOT NULL, "
    "part {num} NOT NULL, next_offset {num} NOT NULL, PRIMARY KEY (consumer, topic, part))",
]


def recreate_the_old_way(db: Database) -> None:
    types = {k: db.column_type(k) for k in ("text", "real")} | {"num": db.column_type("int")}
    with db.transaction() as tx:
        for table in SIDE_TABLES:
            tx.execute(f"DROP TABLE {table}")
        for statement in OLD_DDL:
            tx.execute(statement.format(**types))


def test_a_store_whose_tables_were_created_the_old_way_upgrades_cleanly(
        store_url: str, tmp_path: Path) -> None:
    with backends.open_ledger(store_url, tmp_path) as ledger:
        recreate_the_old_way(ledger.db)
        fill(ledger.tables)  # rows written into the old tables
        before = contents(ledger.tables)
    with backends.open_ledger(store_url, tmp_path) as upgraded:
        assert contents(upgraded.tables) == before
        upgraded.tables.tokens.insert(Token("t2", "new", "read", "2026-11-02T08:00:00+00:00"), "d2")
        assert [t.token_id for t in upgraded.tables.tokens.all()] == ["t1", "t2"]
        assert upgraded.tables.relay_positions().load().position == 5
