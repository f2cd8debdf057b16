"""Snapshots: an aggregate's state every so many events, so loading it stays cheap.

A recurring job or a product gains events on every crawl; without snapshots
each command replays its whole history (a job crawled hourly for 50 days
took ~150 ms to lease on SQLite). With them, loading reads the latest
snapshot and at most `interval` events after it.

Snapshots are derived data, not part of the log: they are never published,
the audit chain does not cover them, and they can be deleted at any time
(loading then replays the events, and the next interval writes new ones).

Events carry primitive payloads; snapshots carry an aggregate's whole state,
which also holds a few value objects. Each gets a named transcoding, and
`domain.snapshot_event.LedgerSnapshot` restores tuples (JSON has only lists), so a
snapshot decodes into exactly the object replaying the events builds
(tests/integration/test_snapshotting.py).
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from eventsourcing.persistence import JSONTranscoder, Transcoding

from domain.crawl_job import RetryPolicy
from domain.values import Policy


class PolicyAsDict(Transcoding):
    type = Policy
    name = "crawl_policy"

    def encode(self, obj: Policy) -> dict[str, Any]:
        return asdict(obj)

    def decode(self, data: dict[str, Any]) -> Policy:
        return Policy(**data)


class RetryPolicyAsDict(Transcoding):
    type = RetryPolicy
    name = "retry_policy"

    def encode(self, obj: RetryPolicy) -> dict[str, Any]:
        return obj.to_payload()

    def decode(self, data: dict[str, Any]) -> RetryPolicy:
        return RetryPolicy(**data)


class FrozensetAsList(Transcoding):
    type = frozenset
    name = "frozenset"

    def encode(self, obj: frozenset[Any]) -> list[Any]:
        return sorted(obj)

    def decode(self, data: list[Any]) -> frozenset[Any]:
        return frozenset(data)


def register(transcoder: JSONTranscoder) -> None:
    for transcoding in (PolicyAsDict(), RetryPolicyAsDict(), FrozensetAsList()):
        transcoder.register(transcoding)
