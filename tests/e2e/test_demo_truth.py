"""The demo path against the simulator's ground truth, over real HTTP on loopback.

Five stores (one per platform), seven cycles on the simulated clock, the demo's
seed jobs (store locator + three feeds), no random faults but planned 429s and
500s on some stores' epochs. Afterwards the ledger's Product events must be
exactly what an independent model derives from the truth and from which crawls
succeeded (`truth_model.py`), and no failed crawl may have produced a miss.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from truth_model import Key, TruthModel, describe_difference, recorded_events, successful_runs

from domain.envelope import Envelope
from domain.sightings import expand
from ledger.drivers.demo import DemoConfig

CONFIG = DemoConfig(stores=5, cycles=7, seed=9, fault_rate=0.0, concurrency=8)
#: store-0 dispensary, store-1 shopify, store-2 woocommerce, store-3 jsonld, store-4 microdata.
#: Faults go to the API stores: their catalog is their only job, so a faulty epoch costs one
#: failed request. (The HTML stores also have many feed-found product pages; a fault there
#: fails each of them in turn and the host's exponential backoff makes the test slow.)
#: Never three failing epochs in a row: a third failed attempt dead-letters the job.
FAULTS = {
    "store-0": {"epochs": {2: "http_429", 3: "http_500"}},
    "store-1": {"epochs": {1: "http_500", 4: "http_429", 5: "http_429"}},
    "store-2": {"epochs": {3: "http_429", 5: "http_500"}},
}
ERROR_KIND = {"http_429": "rate_limited", "http_500": "http_5xx"}


@dataclass(frozen=True)
class DemoRun:
    harness: Any
    envelopes: list[Envelope]
    store_keys: dict[str, str]
    jobs: dict[str, dict[str, Any]]

    def job_runs(self, event_type: str, kind: str) -> list[tuple[str, str, int, Envelope]]:
        """(job id, store key, epoch, event) for this event type of jobs of this kind."""
        return [(e.stream_id, self.store_keys[self.jobs[e.stream_id]["store_id"]],
                 self.harness.epoch_of(e.payload["at"]), e)
                for e in self.envelopes
                if e.event_type == event_type and self.jobs[e.stream_id]["kind"] == kind]


@pytest.fixture(scope="module")
def demo(demo_harness: Callable[..., Any]) -> DemoRun:
    harness = demo_harness(CONFIG, faults=FAULTS)
    harness.seed_demo_jobs()
    harness.run_cycles()
    envelopes = harness.envelopes()
    jobs = {e.stream_id: e.payload for e in envelopes if e.event_type == "CrawlJob.Scheduled"}
    return DemoRun(harness, envelopes, harness.store_keys(), jobs)


def _expected(demo: DemoRun) -> Counter[Key]:
    runs = successful_runs(demo.envelopes, demo.store_keys, demo.harness.epoch_of)
    return TruthModel(demo.harness.sim.simulator.truth).replay(runs)


def test_every_store_was_found_and_crawled_every_cycle_it_was_due(demo: DemoRun) -> None:
    assert sorted(demo.store_keys.values()) == [f"store-{i}" for i in range(CONFIG.stores)]
    catalogs = {demo.store_keys[j["store_id"]] for j in demo.jobs.values()
                if j["kind"] == "catalog"}
    assert catalogs == set(demo.store_keys.values())
    assert not [e for e in demo.envelopes if e.event_type == "CrawlJob.DeadLettered"
                and demo.jobs[e.stream_id]["kind"] == "catalog"]


def test_product_events_match_the_truth(demo: DemoRun) -> None:
    expected = _expected(demo)
    recorded = recorded_events(demo.envelopes, demo.store_keys, demo.harness.epoch_of)
    assert recorded == expected, describe_difference(expected, recorded)


def test_the_model_is_not_vacuous(demo: DemoRun) -> None:
    """The seed and faults exercise every rule: prices, misses, all three outs, back in stock."""
    expected = _expected(demo)
    kinds = Counter((k[3], k[4] if k[3] == "WentOutOfStock" else None) for k in expected)
    assert kinds[("PriceChanged", None)] >= 5, kinds
    assert kinds[("Missed", None)] >= 3, kinds
    assert kinds[("WentOutOfStock", "misses")] >= 1, kinds
    assert kinds[("WentOutOfStock", "feed_says")] >= 1, kinds
    assert kinds[("WentOutOfStock", "gone")] >= 1, kinds
    assert kinds[("BackInStock", None)] >= 1, kinds
    specials = [k for k in expected if k[3] == "PriceChanged" and k[4][1][1] != k[4][2][1]]
    regulars = [k for k in expected if k[3] == "PriceChanged" and k[4][1][0] != k[4][2][0]]
    assert specials and regulars


def test_catalog_failures_are_exactly_the_planned_faults(demo: DemoRun) -> None:
    failed = {(store, epoch): e.payload["error_kind"]
              for _, store, epoch, e in demo.job_runs("CrawlJob.Failed", "catalog")}
    served = demo.harness.sim.simulator.faulted_epochs()
    assert failed, "no catalog crawl failed: the faults did not hit"
    assert {kind for kind in failed.values()} == {"rate_limited", "http_5xx"}
    for (store, epoch), kind in failed.items():
        assert epoch in served.get(store, ()), (store, epoch, kind)
        assert kind == ERROR_KIND[FAULTS[store]["epochs"][epoch]], (store, epoch)


def test_failed_crawls_never_produce_a_miss(demo: DemoRun) -> None:
    failed = {(job, epoch) for kind in ("catalog", "product_page")
              for job, _, epoch, _ in demo.job_runs("CrawlJob.Failed", kind)}
    succeeded = {(job, epoch) for kind in ("catalog", "product_page")
                 for job, _, epoch, _ in demo.job_runs("CrawlJob.Succeeded", kind)}
    product_store = {e.stream_id: demo.store_keys[e.payload["store_id"]]
                     for e in demo.envelopes if e.event_type == "Product.Discovered"}
    faulted = demo.harness.sim.simulator.faulted_epochs()
    for env in expand(demo.envelopes):
        if env.event_type not in ("Product.Missed", "Product.Observed", "Product.Sighted"):
            continue
        epoch = demo.harness.epoch_of(env.payload.get("at") or env.payload["observed_at"])
        run = (env.payload["job_id"], epoch)
        assert run in succeeded and run not in failed, env
        assert epoch not in faulted.get(product_store[env.stream_id], ()), env
