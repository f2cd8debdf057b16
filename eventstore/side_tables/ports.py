"""The side tables' port: one protocol per table family, and the values they carry.

Every family has one adapter (a module of this package) written against the
read-model database port (`eventstore.database.Database`, `Tx`), whose SQLite and
PostgreSQL adapters run it: portable SQL, and what differs between the engines
(placeholders, row locks, commit durability, column types) is each engine adapter's
(`Tx.row_lock`, `Tx.commit_without_flush`, `Database.column_type`), never a caller's.
Contract tests run each operation on both engines (tests/integration/test_side_tables.py).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, NamedTuple, Protocol

from eventstore.database import Tx

__all__ = ["AlertChannelTable", "Claim", "Counters", "DatasetManifestTable", "HeartbeatTable", "ImageClaimTable",
           "KafkaOffsetTable", "Offsets", "ProxyTable", "RelayPositionTable", "SessionTable",
           "StoredChannel", "StoredManifest", "StoredPosition", "StoredSession", "Token",
           "TokenTable",
           "WorkerOwnerTable"]

#: next offset per (topic, partition)
Offsets = dict[tuple[str, int], int]
#: (proxy id, successes, failures, consecutive failures, latency EWMA seconds)
Counters = tuple[str, int, int, int, float | None]


@dataclass(frozen=True)
class Token:
    """An API token's record (its secret is never stored, only its sha256)."""

    token_id: str
    name: str
    scope: str
    created_at: str
    revoked_at: str | None = None


class TokenTable(Protocol):
    """API token records by the digest of their secret."""

    def insert(self, token: Token, digest: str) -> None: ...

    def live(self, digest: str) -> Token | None:
        """The unrevoked token whose secret has this digest, or None."""
        ...

    def all(self) -> list[Token]:
        """Every token, revoked ones too, oldest first."""
        ...

    def revoke(self, token_id: str, at: str) -> bool:
        """Revoke a live token; False if there is none by that id."""
        ...

    def any_live(self) -> bool: ...


@dataclass(frozen=True)
class StoredManifest:
    """Which events a Parquet dataset directory holds (every one up to `position`) and
    the dataset projection's state after them (JSON text)."""

    position: int
    state: str


class DatasetManifestTable(Protocol):
    """The Parquet datasets' manifests by the id of their directory
    (`projections.datasets`): the source of truth a catch-up resumes from."""

    def load(self, dataset_id: str) -> StoredManifest | None: ...

    def save(self, dataset_id: str, position: int, state: str) -> None: ...

    def forget(self, dataset_id: str) -> None: ...


@dataclass(frozen=True)
class StoredSession:
    """A dashboard session's row: the digest of the token it was opened with (never the
    token), its CSRF secret, when it was last used (seconds since the epoch) and what
    the last action did, shown once."""

    token_digest: str
    csrf: str
    used_at: float
    flash: dict[str, str]


class SessionTable(Protocol):
    """Dashboard sessions by the digest of their cookie (`api.sessions`): they outlive
    the server process, and end by sign-out, idleness or their token's revocation."""

    def open(self, key: str, token_digest: str, csrf: str, at: float) -> None: ...

    def get(self, key: str) -> StoredSession | None: ...

    def touch(self, key: str, at: float) -> None:
        """Mark the session used at `at` (never moving its time back)."""
        ...

    def put_flash(self, key: str, flash: dict[str, str]) -> None: ...

    def take_flash(self, key: str) -> dict[str, str]:
        """The session's flash, cleared: one caller gets it, once."""
        ...

    def close(self, key: str) -> None: ...

    def forget_idle(self, before: float) -> int:
        """Delete every session last used before `before`; how many."""
        ...


@dataclass(frozen=True)
class Claim:
    """The URLs one `claim` call won, under its own token (two batches of one step, the
    image agent's and its sweep's, are two claimants too)."""

    token: str
    urls: frozenset[str]


class ImageClaimTable(Protocol):
    """Who is downloading an image URL right now (`runtime.image_step`)."""

    def claim(self, urls: Iterable[str], now: datetime) -> Claim:
        """Claim each URL that is free (or whose claim ran out); the URLs won."""
        ...

    def release(self, claim: Claim) -> None:
        """Give the claim's URLs back (those taken over after it ran out stay taken)."""
        ...

    def held(self) -> dict[str, str]:
        """Every claim now in the table: URL -> owner."""
        ...


class StoredChannel(NamedTuple):
    kind: str
    url: str
    secret: str | None


class AlertChannelTable(Protocol):
    """Alert channel URLs and secrets by subscription id, and the alert handler's
    positions in the notification log by name."""

    def put(self, subscription_id: str, kind: str, url: str, secret: str | None) -> None: ...

    def get(self, subscription_id: str) -> StoredChannel | None: ...

    def delete(self, subscription_id: str) -> None: ...

    def position(self, name: str) -> int:
        """The position stored under `name`, 0 if none is."""
        ...

    def move(self, name: str, position: int) -> None: ...


class ProxyTable(Protocol):
    """Proxy URLs (with credentials) and health counters by proxy id."""

    def put_url(self, proxy_id: str, url: str) -> None: ...

    def urls(self) -> dict[str, str]: ...

    def save_health(self, rows: list[Counters]) -> None: ...

    def health(self) -> dict[str, dict[str, Any]]:
        """Counters by proxy id: successes, failures, consecutive_failures, latency."""
        ...


class HeartbeatTable(Protocol):
    """Each worker's last heartbeat, kept in place."""

    def put(self, name: str, at: datetime, in_flight: int, rss_bytes: int,
            cpu_seconds: float) -> None:
        """Replace the worker's row (`at` kept as fixed-width ISO text that sorts)."""
        ...

    def latest(self) -> dict[str, dict[str, Any]]:
        """The rows by worker name: name, at, in_flight, rss_bytes, cpu_seconds."""
        ...


class WorkerOwnerTable(Protocol):
    """Which API token each bot worker name belongs to (the first to claim it)."""

    def claim(self, name: str, token_id: str) -> bool:
        """Whether `name` is `token_id`'s, claiming it when no token has it yet."""
        ...

    def owns(self, name: str, token_id: str) -> bool:
        """Whether `name` is `token_id`'s (a name no token has claimed is nobody's)."""
        ...


@dataclass(frozen=True)
class StoredPosition:
    position: int
    gaps: int


class RelayPositionTable(Protocol):
    """The relay's durable progress under its name: position, gaps, acknowledged offsets."""

    name: str

    def load(self) -> StoredPosition: ...

    def save(self, position: int, gaps: list[int], recorded_at: str,
             offsets: Offsets | None = None) -> None:
        """Advance to `position`, recording `gaps` and the next offset per topic-partition
        after what the broker acknowledged, in one transaction."""
        ...

    def offsets(self) -> Offsets: ...

    def gaps(self) -> list[int]: ...


class KafkaOffsetTable(Protocol):
    """The Kafka projector's next offset per consumer group and topic-partition, written
    in the transaction that applies the messages."""

    def stored(self, consumer: str) -> Offsets: ...

    def lock(self, tx: Tx, consumer: str, parts: list[tuple[str, int]]) -> Offsets:
        """The parts' offsets (a missing one starts at 0), locked until `tx` ends so two
        consumers that briefly own one partition apply its batches one after the other;
        `parts` sorted, a fixed lock order."""
        ...

    def advance(self, tx: Tx, consumer: str, ends: Offsets) -> None: ...
