"""The side tables' shape, and the one migration step that creates them all.

Side tables hold what is coordination or a credential, never history: API token
hashes, dashboard sessions, the Parquet datasets' manifests, image-download claims,
alert channel URLs and the alert handler's positions, proxy URLs and health
counters, worker heartbeats and owners, the relay's position, gaps and acknowledged
offsets, and the Kafka projector's offsets. They live in the read-model database
beside the read models.

`create_side_tables` runs every statement in one transaction; each is
`IF NOT EXISTS`, so running it again, or on a database whose tables an older
version created one by one (the same shapes), changes nothing. The composition
root runs it while it holds the schema lock (`eventstore.locks.postgres_schema_lock`),
so processes started together on one PostgreSQL schema never race to create them.
"""

from __future__ import annotations

from eventstore.database import Database

__all__ = ["SIDE_TABLES", "create_side_tables", "side_table_ddl"]

TOKENS = "api_tokens"
SESSIONS = "dashboard_sessions"
DATASET_MANIFESTS = "dataset_manifests"
IMAGE_CLAIMS = "image_claims"
ALERT_CHANNELS = "alert_channels"
ALERT_POSITIONS = "alert_positions"
PROXY_URLS = "proxy_urls"
PROXY_HEALTH = "proxy_health"
HEARTBEATS = "worker_heartbeats"
WORKER_OWNERS = "worker_owners"
RELAY_POSITION = "relay_position"
RELAY_GAPS = "relay_gaps"
RELAY_OFFSETS = "relay_offsets"
KAFKA_OFFSETS = "kafka_offsets"
SIDE_TABLES = (TOKENS, SESSIONS, DATASET_MANIFESTS, IMAGE_CLAIMS, ALERT_CHANNELS, ALERT_POSITIONS,
               PROXY_URLS, PROXY_HEALTH, HEARTBEATS, WORKER_OWNERS, RELAY_POSITION, RELAY_GAPS,
               RELAY_OFFSETS, KAFKA_OFFSETS)


def side_table_ddl(db: Database) -> list[str]:
    """The statements creating every side table on `db`'s engine (idempotent)."""
    text, num, real = db.column_type("text"), db.column_type("int"), db.column_type("real")
    return [
        f"CREATE TABLE IF NOT EXISTS {TOKENS} (token_id TEXT PRIMARY KEY, "
        "digest TEXT NOT NULL UNIQUE, name TEXT NOT NULL, scope TEXT NOT NULL, "
        "created_at TEXT NOT NULL, revoked_at TEXT)",
        f"CREATE TABLE IF NOT EXISTS {SESSIONS} (session_key {text} PRIMARY KEY, "
        f"token_digest {text} NOT NULL, csrf {text} NOT NULL, used_at {real} NOT NULL, "
        f"flash {text} NOT NULL)",
        f"CREATE TABLE IF NOT EXISTS {DATASET_MANIFESTS} (dataset_id {text} PRIMARY KEY, "
        f"position {num} NOT NULL, state {text} NOT NULL)",
        f"CREATE TABLE IF NOT EXISTS {IMAGE_CLAIMS} (url {text} PRIMARY KEY, "
        f"owner {text} NOT NULL, claimed_at {real} NOT NULL)",
        f"CREATE TABLE IF NOT EXISTS {ALERT_CHANNELS} (subscription_id {text} PRIMARY KEY,"
        f" kind {text} NOT NULL, url {text} NOT NULL, secret {text})",
        f"CREATE TABLE IF NOT EXISTS {ALERT_POSITIONS} (name {text} PRIMARY KEY, "
        f"position {num} NOT NULL)",
        f"CREATE TABLE IF NOT EXISTS {PROXY_URLS} (proxy_id {text} PRIMARY KEY, "
        f"url {text} NOT NULL)",
        f"CREATE TABLE IF NOT EXISTS {PROXY_HEALTH} (proxy_id {text} PRIMARY KEY, "
        f"successes {num} NOT NULL, failures {num} NOT NULL, "
        f"consecutive_failures {num} NOT NULL, latency {real})",
        f"CREATE TABLE IF NOT EXISTS {HEARTBEATS} (name TEXT PRIMARY KEY, at TEXT NOT "
        "NULL, in_flight INTEGER, rss_bytes INTEGER, cpu_seconds REAL)",
        f"CREATE TABLE IF NOT EXISTS {WORKER_OWNERS} (name TEXT PRIMARY KEY, "
        "token_id TEXT NOT NULL)",
        f"CREATE TABLE IF NOT EXISTS {RELAY_POSITION} (name {text} PRIMARY KEY, "
        f"position {num} NOT NULL, gaps {num} NOT NULL)",
        f"CREATE TABLE IF NOT EXISTS {RELAY_GAPS} (name {text} NOT NULL, "
        f"position {num} NOT NULL, recorded_at {text} NOT NULL, "
        f"PRIMARY KEY (name, position))",
        f"CREATE TABLE IF NOT EXISTS {RELAY_OFFSETS} (name {text} NOT NULL, "
        f"topic {text} NOT NULL, part {num} NOT NULL, next_offset {num} NOT NULL, "
        f"PRIMARY KEY (name, topic, part))",
        f"CREATE TABLE IF NOT EXISTS {KAFKA_OFFSETS} (consumer {text} NOT NULL, "
        f"topic {text} NOT NULL, part {num} NOT NULL, next_offset {num} NOT NULL, "
        f"PRIMARY KEY (consumer, topic, part))",
    ]


def create_side_tables(db: Database) -> None:
    """The migration step: every side table, in one transaction (see the module docstring)."""
    with db.transaction() as tx:
        for statement in side_table_ddl(db):
            tx.execute(statement)
