"""Kafka topics: one public topic per aggregate type, plus the work topic.

Every public topic starts `ledger.` and carries the JSON envelope
(`domain.envelope.Envelope`) keyed by stream id. Topics are created
explicitly with a fixed partition count before workers start: Faust wants
source topics to match its configured partition count, and a broker that
auto-creates topics would pick its own.
"""

from __future__ import annotations

from collections.abc import Iterable

STORES = "ledger.stores.v1"
CRAWL_JOBS = "ledger.crawl-jobs.v1"
PRODUCTS = "ledger.products.v1"
WORK = "ledger.work.v1"

PUBLIC_TOPICS = (STORES, CRAWL_JOBS, PRODUCTS)
ALL_TOPICS = (*PUBLIC_TOPICS, WORK)
BY_STREAM_TYPE = {"Store": STORES, "CrawlJob": CRAWL_JOBS, "Product": PRODUCTS}
DEFAULT_PARTITIONS = 4


class UnknownStreamType(Exception):
    """An envelope whose stream type has no topic: a new aggregate needs a topic first."""


def topic_for(stream_type: str) -> str:
    try:
        return BY_STREAM_TYPE[stream_type]
    except KeyError:
        raise UnknownStreamType(f"no Kafka topic for stream type {stream_type!r}") from None


def ensure_topics(servers: list[str], partitions: int = DEFAULT_PARTITIONS,
                  topics: Iterable[str] = ALL_TOPICS, timeout_ms: int = 15_000) -> list[str]:
    """Create the missing topics with `partitions` partitions; returns the ones created."""
    from kafka.admin import KafkaAdminClient, NewTopic
    from kafka.errors import TopicAlreadyExistsError

    admin = KafkaAdminClient(bootstrap_servers=servers, client_id="crawl-ledger-admin",
                             request_timeout_ms=timeout_ms)
    try:
        existing = set(admin.list_topics())
        missing = [t for t in topics if t not in existing]
        if missing:
            try:
                admin.create_topics([NewTopic(t, partitions, 1) for t in missing])
            except TopicAlreadyExistsError:
                pass  # a concurrent creator won the race: fine
        return missing
    finally:
        admin.close()
