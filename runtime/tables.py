"""The side tables as drivers see them: the port of `eventstore.side_tables`, reached
through the ledger (`Ledger.tables`), never created or queried with SQL by a driver."""

from __future__ import annotations

from eventstore.side_tables import (
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
    SideTables,
    StoredChannel,
    StoredManifest,
    StoredPosition,
    StoredSession,
    Token,
    TokenTable,
    WorkerOwnerTable,
)

__all__ = ["AlertChannelTable", "Claim", "Counters", "DatasetManifestTable", "HeartbeatTable", "ImageClaimTable",
           "KafkaOffsetTable", "Offsets", "ProxyTable", "RelayPositionTable", "SessionTable",
           "SideTables", "StoredChannel", "StoredManifest", "StoredPosition", "StoredSession", "Token", "TokenTable",
           "WorkerOwnerTable"]
