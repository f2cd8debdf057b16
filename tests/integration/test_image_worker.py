"""`worker --role image` against Tansu, PostgreSQL and the store simulator, beside
`crawl-ledger images fetch`: every product image is downloaded once and recorded.

A catalog of a simulated Shopify store (a crawl delay, so its images take a while) is
crawled by a dispatch+crawl+project worker; the relay publishes its `Product.Discovered`
events and the image worker downloads their image URLs. While it does, an operator runs
`images fetch` over the same store and data dir. The simulator's request log shows each
image path requested exactly once, each product has one `Product.ImageStored`, the files
are in the shared data dir and no download claim is left behind.
"""

from __future__ import annotations

import os
import subprocess
from collections import Counter
from datetime import UTC, datetime
from typing import Any

import pytest
from fleet import wait_for
from kafka_fixtures import KAFKA_WARNINGS, pg_store_url, tansu_broker  # noqa: F401
from test_distributed import dist, dist_settings  # noqa: F401

from ledger.bootstrap import Ledger
from ledger.drivers.distributed import Cluster, cli_command, settings_env
from ledger.settings import Settings
from runtime.image_step import ImageStore
from simulator import SimulatorThread

pytestmark = [pytest.mark.postgres, pytest.mark.kafka, KAFKA_WARNINGS, pytest.mark.timeout(240)]


def events_of(ledger: Ledger, *types: str) -> list[Any]:
    return [e for e in ledger.source.read(0, 1_000_000) if e.event_type in types]


def test_the_image_role_and_images_fetch_download_each_image_once(
        dist: Ledger, dist_settings: Settings) -> None:  # noqa: F811
    settings = dist_settings
    with SimulatorThread(stores=3, seed=2) as sim:
        served = next(s for s in sim.urls.stores if s.platform == "shopify")
        now = datetime.now(UTC)
        store = dist.app.register_store(name=served.spec.name, base_url=served.base_url,
                                        platform="shopify", now=now, crawl_delay=0.1)
        dist.app.schedule_job(kind="catalog", url=served.entry_url, store_id=store,
                              every=86400, now=now)
        with Cluster(settings, workers=[("dispatch", "crawl", "project"), ("image",)],
                     worker_args=["--images-every", "2"]):
            wait_for(lambda: dist.read.image_counts().get("pending")
                     or dist.read.image_counts().get("stored"), "the catalog's images", 120)
            fetched = subprocess.run(  # an operator's fetch while the image worker runs
                [*cli_command(), "images", "fetch"], env=os.environ | settings_env(settings),
                capture_output=True, text=True, timeout=120, check=False)
            assert fetched.returncode == 0, fetched.stderr
            products = {e.stream_id: e.payload["image_url"]
                        for e in events_of(dist, "Product.Discovered")}
            wait_for(lambda: len(events_of(dist, "Product.ImageStored", "Product.ImageFailed"))
                     >= len(products), "every product's image recorded", 120)
        downloads = Counter(r.path for r in sim.simulator.requests(served.key)
                            if r.path.startswith("/images/"))
    recorded = events_of(dist, "Product.ImageStored", "Product.ImageFailed")
    assert sorted(e.stream_id for e in recorded) == sorted(products)  # one outcome each
    assert {e.event_type for e in recorded} == {"Product.ImageStored"}
    assert {e.payload["url"] for e in recorded} == set(products.values())
    assert downloads and set(downloads.values()) == {1}, downloads  # each image once
    assert len(downloads) == len(set(products.values()))
    assert all(ImageStore(settings.data_dir).has(e.payload["sha256"]) for e in recorded)
    assert dist.tables.image_claims.held() == {}
