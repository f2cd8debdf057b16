"""Kafka topics: one public topic per aggregate type, plus the work topic.

Every public topic starts `ledger.` and carries the JSON envelope
(`domain.envelope.Envelope`) keyed by stream id. A deployment id
(`LEDGER_DEPLOYMENT`) namespaces them, so several deployments can share one
broker: `ledger.<deployment>.crawl-jobs.v1`; without one the names are
`ledger.crawl-jobs.v1` and so on. Topics are created
explicitly with a fixed partition count before workers start: Faust wants
source topics to match its configured partition count, and a broker that
auto-creates topics would pick its own.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

STORES = "ledger.stores.v1"
CRAWL_JOBS = "ledger.crawl-jobs.v1"
PRODUCTS = "ledger.products.v1"
WORKERS = "ledger.workers.v1"
ALERTS = "ledger.alerts.v1"
WORK = "ledger.work.v1"

PUBLIC_TOPICS = (STORES, CRAWL_JOBS, PRODUCTS, WORKERS, ALERTS)
ALL_TOPICS = (*PUBLIC_TOPICS, WORK)
BY_STREAM_TYPE = {"Store": STORES, "CrawlJob": CRAWL_JOBS, "Product": PRODUCTS,
                  "Worker": WORKERS, "Subscription": ALERTS, "Delivery": ALERTS,
                  "Proxy": STORES}
DEFAULT_PARTITIONS = 4


@dataclass(frozen=True)
class Topics:
    """The topic names of one deployment (`namespace`: its id, or "" for none)."""

    namespace: str = ""

    def name(self, base: str) -> str:
        return f"ledger.{self.namespace}.{base}" if self.namespace else f"ledger.{base}"

    @property
    def stores(self) -> str:
        return self.name("stores.v1")

    @property
    def crawl_jobs(self) -> str:
        return self.name("crawl-jobs.v1")

    @property
    def products(self) -> str:
        return self.name("products.v1")

    @property
    def workers(self) -> str:
        return self.name("workers.v1")

    @property
    def alerts(self) -> str:
        return self.name("alerts.v1")

    @property
    def work(self) -> str:
        return self.name("work.v1")

    @property
    def public(self) -> tuple[str, str, str, str, str]:
        return (self.stores, self.crawl_jobs, self.products, self.workers, self.alerts)

    @property
    def all(self) -> tuple[str, ...]:
        return (*self.public, self.work)

    def for_stream(self, stream_type: str) -> str:
        try:
            return self.name(_BASES[stream_type])
        except KeyError:
            raise UnknownStreamType(f"no Kafka topic for stream type {stream_type!r}") from None


_BASES = {"Store": "stores.v1", "CrawlJob": "crawl-jobs.v1", "Product": "products.v1",
          "Worker": "workers.v1", "Subscription": "alerts.v1", "Delivery": "alerts.v1",
          "Proxy": "stores.v1"}


class UnknownStreamType(Exception):
    """An envelope whose stream type has no topic: a new aggregate needs a topic first."""


def topic_for(stream_type: str) -> str:
    """The topic of a stream type without a deployment namespace."""
    return Topics().for_stream(stream_type)


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
