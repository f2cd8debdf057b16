"""The side tables behind one port: what is coordination or a credential, never history.

`SideTables` hands out one adapter per table family (the protocols of
`eventstore.side_tables.ports`) over the read-model database; `create_side_tables`
is the one migration step creating them all (`eventstore.side_tables.schema`),
run by the composition root. Nothing else creates them, and no caller writes SQL
for them.
"""

from __future__ import annotations

from eventstore.database import Database
from eventstore.side_tables.alert_channels import SqlAlertChannels
from eventstore.side_tables.dataset_manifests import SqlDatasetManifests
from eventstore.side_tables.heartbeats import SqlHeartbeats, SqlWorkerOwners
from eventstore.side_tables.image_claims import CLAIM_TTL, ImageClaims
from eventstore.side_tables.kafka_offsets import SqlKafkaOffsets
from eventstore.side_tables.ports import (
    AlertChannelTable,
    Claim,
    Counters,
    DatasetManifestTable,
    HeartbeatTable,
    ImageClaimTable,
    KafkaOffsetTable,
    Offsets,
    ProxyTable,
    RelayPositionTable,
    SessionTable,
    StoredChannel,
    StoredManifest,
    StoredPosition,
    StoredSession,
    Token,
    TokenTable,
    WorkerOwnerTable,
)
from eventstore.side_tables.proxy_health import SqlProxies
from eventstore.side_tables.relay_positions import RelayPositions
from eventstore.side_tables.schema import SIDE_TABLES, create_side_tables
from eventstore.side_tables.sessions import SqlSessions
from eventstore.side_tables.tokens import SqlTokens

__all__ = ["CLAIM_TTL", "SIDE_TABLES", "AlertChannelTable", "Claim", "Counters",
           "DatasetManifestTable", "HeartbeatTable",
           "ImageClaimTable", "KafkaOffsetTable", "Offsets", "ProxyTable", "RelayPositionTable",
           "SessionTable", "SideTables", "StoredChannel", "StoredManifest", "StoredPosition", "StoredSession",
           "Token", "TokenTable", "WorkerOwnerTable", "create_side_tables"]


class SideTables:
    """Every side-table family's adapter over one read-model database."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self.tokens: TokenTable = SqlTokens(db)
        self.sessions: SessionTable = SqlSessions(db)
        self.dataset_manifests: DatasetManifestTable = SqlDatasetManifests(db)
        self.image_claims: ImageClaimTable = ImageClaims(db)
        self.alert_channels: AlertChannelTable = SqlAlertChannels(db)
        self.proxies: ProxyTable = SqlProxies(db)
        self.heartbeats: HeartbeatTable = SqlHeartbeats(db)
        self.worker_owners: WorkerOwnerTable = SqlWorkerOwners(db)
        self.kafka_offsets: KafkaOffsetTable = SqlKafkaOffsets(db)

    def claims(self, ttl: float = CLAIM_TTL) -> ImageClaimTable:
        """Image claims that run out after `ttl` seconds (`image_claims` uses the default)."""
        return ImageClaims(self.db, ttl)

    def relay_positions(self, name: str = "kafka") -> RelayPositionTable:
        """The progress of the relay called `name` (one relay per event store)."""
        return RelayPositions(self.db, name)
