"""Prometheus metrics of the shared job step, named `crawl_ledger_*`.

They live in prometheus-client's default registry of the process that runs jobs
(the embedded runner, a Faust worker, the API recording bot results), which
exposes them: `crawl-ledger run|worker --metrics-port N` serves them on
127.0.0.1:N, `crawl-ledger serve` adds them to its `/metrics`.

- `crawl_ledger_leases_total` — jobs leased by this process;
- `crawl_ledger_in_flight` — jobs leased and not yet recorded;
- `crawl_ledger_fetch_seconds` — crawl duration per job (fetch + extraction), by kind;
- `crawl_ledger_results_recorded_total{outcome}` — `ok`, `failed`, or `lost` (lease gone);
- `crawl_ledger_failures_total{reason}` — failed crawls by failure kind;
- `crawl_ledger_extraction_misses_total` — pages fetched that gave no product;
- `crawl_ledger_record_group_size` — results recorded per transaction (group commit).
"""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

from domain.values import CrawlOutcome, CrawlSuccess

__all__ = ["FETCH_SECONDS", "FAILURES", "GROUP_SIZE", "IN_FLIGHT", "LEASES", "MISSES",
           "RESULTS", "observe_outcome"]

LEASES = Counter("crawl_ledger_leases", "jobs leased by this process")
IN_FLIGHT = Gauge("crawl_ledger_in_flight", "jobs leased and not yet recorded")
FETCH_SECONDS = Histogram("crawl_ledger_fetch_seconds", "crawl duration per job", ["kind"],
                          buckets=(0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120))
GROUP_SIZE = Histogram("crawl_ledger_record_group_size", "results recorded per transaction",
                       buckets=(1, 2, 4, 8, 16, 32, 64))
RESULTS = Counter("crawl_ledger_results_recorded", "crawl results recorded", ["outcome"])
FAILURES = Counter("crawl_ledger_failures", "failed crawls by reason", ["reason"])
MISSES = Counter("crawl_ledger_extraction_misses", "pages fetched that gave no product")


def observe_outcome(outcome: CrawlOutcome, recorded: bool) -> None:
    """Count one crawl's outcome once it was recorded (or found its lease gone)."""
    if not recorded:
        RESULTS.labels("lost").inc()
        return
    if isinstance(outcome, CrawlSuccess):
        RESULTS.labels("ok").inc()
        return
    RESULTS.labels("failed").inc()
    FAILURES.labels(outcome.error_kind).inc()
    if outcome.error_kind == "no_products":
        MISSES.inc()
