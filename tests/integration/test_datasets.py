"""The dataset writer on a real SQLite event store: exact rows, restarts, crashes, rebuilds."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from backends import LOOPBACK_ENV

from analytics import connect
from analytics.schema import DATASETS as VIEW_COLUMNS
from domain.values import CrawlFailure, CrawlSuccess, Observation, Offer
from ledger.bootstrap import Ledger, bootstrap
from ledger.settings import Settings
from projections import compaction
from projections.compaction import SORTED_BY
from projections.datasets import DatasetWriter
from projections.parquet_writer import (
    DATASETS,
    PART,
    latest_through,
)

T0 = datetime(2026, 3, 1, 20, 0, tzinfo=UTC)
BASE = "https://shop.example"
CRASH_SCRIPT = """
import sys, threading
from pathlib import Path
from ledger.bootstrap import bootstrap
from ledger.settings import Settings
from projections.datasets import DatasetWriter

data_dir, crash_at = Path(sys.argv[1]), int(sys.argv[2])
ledger = bootstrap(Settings.from_env({"LEDGER_DATA_DIR": str(data_dir)}))
batches = []

def pause_before_manifest(last):
    batches.append(last)
    if len(batches) == crash_at:
        print(f"paused {last}", flush=True)
        threading.Event().wait()  # killed here: files renamed, manifest not written

DatasetWriter(data_dir, ledger.source, ledger.tables.dataset_manifests, batch_size=20,
               before_manifest=pause_before_manifest).catch_up()
"""


def _obs(n: int, cycle: int) -> Observation:
    price = Decimal("10.00") + n - (Decimal("1.25") if cycle % 3 == 2 and n == 0 else 0)
    return Observation(provider_product_id=f"p{n}", name=f"Product {n}", category="Goods",
                       offers=(Offer("S", price, "USD"), Offer("L", price + 2, "USD")),
                       availability="in_stock")


class Shop:
    """One store and catalog job, driven through the real commands cycle by cycle."""

    def __init__(self, ledger: Ledger, base: str = BASE) -> None:
        self.app = ledger.app
        self.now = T0
        self.base = base
        self.store_id = self.app.register_store(name="Shop", base_url=base, platform="shopify",
                                                now=T0)
        self.job_id = self.app.schedule_job(kind="catalog", url=f"{base}/products.json",
                                            now=T0, store_id=self.store_id, every=3600,
                                            adaptive=False)

    def _lease(self) -> str:
        self.now = max(self.now, self.app.get_job(self.job_id).next_run_at)
        return self.app.lease(self.job_id, "w1", 300, self.now).lease_id

    def crawl(self, cycle: int, products: range,
              observe: Callable[[int, int], Observation] = _obs) -> None:
        lease = self._lease()
        self.app.record_success(self.job_id, lease, CrawlSuccess(
            http_status=200, final_url=f"{self.base}/products.json", extractor="shopify",
            extractor_version="7", content_hash=f"h{cycle}", duration=0.25,
            observations=tuple(observe(n, cycle) for n in products)), self.now)

    def fail(self) -> None:
        self.app.record_failure(self.job_id, self._lease(),
                                CrawlFailure("http_5xx", "502 Bad Gateway", True), self.now)

    def expire(self) -> None:
        self._lease()
        self.now += timedelta(seconds=301)
        self.app.reap_expired_leases([self.job_id], self.now)


def _history(shop: Shop, cycles: int) -> None:
    for cycle in range(cycles):
        products = range(4) if cycle % 4 != 3 else range(1, 4)  # p0 goes missing sometimes
        if cycle == 2:
            shop.fail()
        elif cycle == 5:
            shop.expire()
        shop.crawl(cycle, products if cycle < 6 or cycle == 9 else range(1, 4))
        shop.now += timedelta(hours=7)


@pytest.fixture
def ledger(tmp_path: Path) -> Iterator[Ledger]:
    opened = bootstrap(Settings.from_env({**LOOPBACK_ENV, "LEDGER_DATA_DIR": str(tmp_path / "data")}))
    yield opened
    opened.close()


@pytest.fixture
def shop(ledger: Ledger) -> Shop:
    shop = Shop(ledger)
    _history(shop, 10)
    return shop


def dump(dataset_dir: Path) -> dict[str, list[tuple[Any, ...]]]:
    con = connect(dataset_dir)
    try:
        return {name: con.sql(f"SELECT * FROM {name} ORDER BY ALL").fetchall()
                for name in DATASETS}
    finally:
        con.close()


def test_rows_denormalise_and_keep_lineage(ledger: Ledger, shop: Shop) -> None:
    writer = DatasetWriter(ledger.data_dir, ledger.source, ledger.tables.dataset_manifests)
    assert writer.catch_up() == ledger.source.head()
    con = connect(writer.root)
    first = con.sql("SELECT * FROM price_observations WHERE option = 'S' ORDER BY position LIMIT 1") \
        .to_arrow_table().to_pylist()[0]
    assert first["store_name"] == "Shop" and first["name"] == "Product 0"
    assert first["category"] == "Goods" and first["price"] == Decimal("10.0000")
    assert first["extractor_version"] == "7" and first["job_id"] == str(shop.job_id)
    runs = con.sql("SELECT outcome, error_kind, attempt FROM job_runs ORDER BY position").fetchall()
    assert runs.count(("succeeded", None, 1)) == 8
    assert ("failed", "http_5xx", 1) in runs and ("expired", "lease_expired", 1) in runs
    assert ("succeeded", None, 2) in runs  # the retry after each failure
    kinds = con.sql("SELECT DISTINCT event_type FROM stock_events ORDER BY 1").fetchall()
    assert kinds == [("back_in_stock",), ("missed",), ("went_out_of_stock",)]
    assert con.sql("SELECT count(DISTINCT date) FROM price_observations").fetchall() == [(4,)]


def test_parquet_files_match_the_published_view_schema(ledger: Ledger, shop: Shop) -> None:
    writer = DatasetWriter(ledger.data_dir, ledger.source, ledger.tables.dataset_manifests)
    writer.catch_up()
    con = connect(writer.root)
    empty = connect(writer.root / "missing")
    for name in DATASETS:
        files = sorted((writer.root / name).glob("date=*/part-*.parquet"))
        assert files and all(PART.match(f.name) for f in files)
        assert pq.read_schema(files[0]).names == list(VIEW_COLUMNS[name])  # `date` included
        live = con.sql(f"DESCRIBE {name}").fetchall()
        typed = empty.sql(f"DESCRIBE {name}").fetchall()
        assert [row[:2] for row in live] == [row[:2] for row in typed]


def test_incremental_catch_up_equals_rebuild(ledger: Ledger, tmp_path: Path) -> None:
    shop = Shop(ledger)
    writer = DatasetWriter(ledger.data_dir, ledger.source, ledger.tables.dataset_manifests, batch_size=7)
    for cycle in range(9):
        shop.crawl(cycle, range(4) if cycle % 4 != 3 else range(1, 4))
        shop.now += timedelta(hours=5)
        writer.catch_up()  # a fresh builder each time: state comes from the manifest
    assert writer.position() == ledger.source.head()
    incremental = dump(writer.root)
    clean = DatasetWriter(tmp_path / "clean", ledger.source, ledger.tables.dataset_manifests, batch_size=1000)
    clean.catch_up()
    assert dump(clean.root) == incremental
    assert writer.rebuild() == ledger.source.head()
    assert dump(writer.root) == incremental
    assert writer.catch_up() == 0 and dump(writer.root) == incremental


def test_crash_after_rename_before_manifest_loses_and_duplicates_nothing(
        ledger: Ledger, shop: Shop, tmp_path: Path) -> None:
    data_dir = ledger.data_dir
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    with subprocess.Popen([sys.executable, "-c", CRASH_SCRIPT, str(data_dir), "3"],
                          stdout=subprocess.PIPE, text=True, env=env) as proc:
        assert proc.stdout is not None
        line = proc.stdout.readline()  # blocks until the writer is paused mid-batch
        os.kill(proc.pid, signal.SIGKILL)
    assert line == "paused 60\n" and proc.returncode == -signal.SIGKILL
    root = data_dir / "datasets"
    position = DatasetWriter(data_dir, ledger.source, ledger.tables.dataset_manifests).position()
    assert position == 40  # two batches of 20 committed, the third not
    orphans = [p for p in root.glob("*/date=*/part-*")
               if int(PART.match(p.name).group(1)) > position]  # type: ignore[union-attr]
    assert orphans  # the crash left the third batch's files behind
    DatasetWriter(data_dir, ledger.source, ledger.tables.dataset_manifests, batch_size=20).catch_up()
    clean = DatasetWriter(tmp_path / "clean", ledger.source, ledger.tables.dataset_manifests)
    clean.catch_up()
    assert dump(root) == dump(clean.root)


#: what the first `price_changes` view computed: a LAG over every observation
CHANGES_BY_WINDOW = """
WITH ordered AS (
    SELECT *, lag(price) OVER w AS old_price, lag(observed_at) OVER w AS previous_at
    FROM price_observations WHERE price IS NOT NULL
    WINDOW w AS (PARTITION BY product_id, pricing_type, option ORDER BY observed_at, position))
SELECT observed_at, previous_at, product_id, option, old_price, price,
       round(100 * (price - old_price) / old_price, 2)::DOUBLE
FROM ordered WHERE old_price IS NOT NULL AND price <> old_price ORDER BY ALL
"""


def test_price_changes_come_from_the_ledgers_events_and_equal_the_window(
        ledger: Ledger, shop: Shop) -> None:
    writer = DatasetWriter(ledger.data_dir, ledger.source, ledger.tables.dataset_manifests)
    writer.catch_up()
    con = connect(writer.root)
    from_events = con.sql(
        "SELECT changed_at, previous_at, product_id, option, old_price, new_price, pct_change "
        "FROM price_changes ORDER BY ALL").fetchall()
    assert from_events and from_events == con.sql(CHANGES_BY_WINDOW).fetchall()
    kinds = {e.position: e.event_type for e in ledger.source.read(0, 10_000)}
    positions = con.sql("SELECT position FROM price_changes").fetchall()
    assert {kinds[p] for (p,) in positions} == {"Product.PriceChanged"}


def test_catch_up_compacts_closed_dates_and_materialises_latest(
        ledger: Ledger, shop: Shop, tmp_path: Path) -> None:
    writer = DatasetWriter(ledger.data_dir, ledger.source, ledger.tables.dataset_manifests, batch_size=7)
    writer.catch_up()
    for name in DATASETS:
        folders = sorted((writer.root / name).glob("date=*"))
        for folder in folders[:-1]:
            (only,) = folder.glob("part-*.parquet")
            assert SORTED_BY in (pq.read_schema(only).metadata or {})
    assert len(list(max((writer.root / "price_observations").glob("date=*"))
                    .glob("part-*"))) > 1  # the open date keeps its batch parts
    assert latest_through(writer.root) == writer.position() == ledger.source.head()
    clean = DatasetWriter(tmp_path / "clean", ledger.source, ledger.tables.dataset_manifests, batch_size=10_000)
    clean.catch_up()
    assert dump(writer.root) == dump(clean.root)
    latest = "SELECT * FROM products_latest ORDER BY ALL"
    assert connect(writer.root).sql(latest).fetchall() == connect(clean.root).sql(latest).fetchall()
    before = sorted(p.stat().st_mtime_ns for p in writer.root.rglob("*.parquet"))
    writer.compact()  # idempotent
    assert sorted(p.stat().st_mtime_ns for p in writer.root.rglob("*.parquet")) == before


def test_datasets_of_an_older_format_are_rebuilt(ledger: Ledger, shop: Shop,
                                                  tmp_path: Path) -> None:
    writer = DatasetWriter(ledger.data_dir, ledger.source, ledger.tables.dataset_manifests)
    writer.catch_up()
    expected = dump(writer.root)
    manifest = writer.manifest()
    old_state = {k: v for k, v in (manifest.state or {}).items() if k != "format"}
    shutil.rmtree(writer.root / "price_changes")
    ident = writer.dataset_id()
    assert ident is not None
    ledger.tables.dataset_manifests.save(ident, manifest.position, json.dumps(old_state))
    assert writer.catch_up() == ledger.source.head()  # replayed from position 0
    assert dump(writer.root) == expected


def _moving(n: int, cycle: int) -> Observation:
    return Observation(provider_product_id=f"p{n}", name=f"Product {n}", category="Goods",
                       offers=(Offer("S", Decimal(10 + (n + cycle // 2) % 3), "USD"),),
                       availability="in_stock")


def _months(shop: Shop, cycles: int) -> None:
    """A crawl every 15 hours: `cycles` of them from 1 March run into April; every
    product's price moves now and then."""
    for cycle in range(cycles):
        shop.crawl(cycle, range(4) if cycle % 5 != 4 else range(1, 4), _moving)
        shop.now += timedelta(hours=15)


def _dates(root: Path, dataset: str, kind: str) -> list[str]:
    return sorted(f.name for f in (root / dataset).glob(f"{kind}=*"))


def test_closed_dates_are_merged_into_month_files_with_the_same_rows(
        ledger: Ledger, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    shop = Shop(ledger)
    _months(shop, 70)  # 1 March 20:00 to 13 April
    writer = DatasetWriter(ledger.data_dir, ledger.source, ledger.tables.dataset_manifests, batch_size=50)
    for _ in range(3):  # catching up as the log grows: March is merged step by step
        writer.catch_up()
        _months(shop, 3)
    writer.catch_up()
    root = writer.root
    for name in ("price_observations", "price_changes", "job_runs", "job_states"):
        assert _dates(root, name, "month") == ["month=2026-03", "month=2026-04"]
        assert not [d for d in _dates(root, name, "date") if d < "date=2026-04"]
        assert len(_dates(root, name, "date")) <= compaction.MONTH_ROLLUP_DAYS  # + the open
        for month in (root / name).glob("month=*"):
            (only,) = month.glob("part-*.parquet")  # one file a month, sorted
            assert SORTED_BY in (pq.read_schema(only).metadata or {})
    for name, keys in compaction.MONTH_SORT_KEYS.items():
        for month in (root / name).glob("month=*/part-*.parquet"):
            rows = pq.read_table(month, columns=list(keys)).to_pylist()
            in_order = [tuple(r[k] for k in keys) for r in rows]
            assert in_order and in_order == sorted(in_order)
    monkeypatch.setattr(compaction, "roll_up", lambda root, dataset: [])
    daily = DatasetWriter(tmp_path / "daily", ledger.source, ledger.tables.dataset_manifests, batch_size=50)
    daily.catch_up()
    assert not list(daily.root.glob("*/month=*"))
    assert dump(root) == dump(daily.root)  # the same rows, `date` included
    latest = "SELECT * FROM products_latest ORDER BY ALL"
    assert connect(root).sql(latest).fetchall() == connect(daily.root).sql(latest).fetchall()
    monkeypatch.undo()
    before = sorted(p.stat().st_mtime_ns for p in root.rglob("*.parquet"))
    writer.compact()  # idempotent
    assert sorted(p.stat().st_mtime_ns for p in root.rglob("*.parquet")) == before


class Crash(Exception):
    pass


def test_a_merge_interrupted_after_its_rename_is_finished_without_duplicates(
        ledger: Ledger, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    shop = Shop(ledger)
    _months(shop, 60)
    published = compaction.publish_written

    def crash_after_rename(root: Path, tmp: Path, final: Path) -> Path:
        published(root, tmp, final)
        raise Crash(final)  # the merged file is in place, the parts it took in are not deleted

    monkeypatch.setattr(compaction, "publish_written", crash_after_rename)
    writer = DatasetWriter(ledger.data_dir, ledger.source, ledger.tables.dataset_manifests)
    with pytest.raises(Crash):
        writer.catch_up()
    monkeypatch.undo()
    root = writer.root
    (month,) = (root / "price_observations").glob("month=*/part-*.parquet")
    taken = (pq.read_schema(month).metadata or {})[compaction.MERGED].decode().splitlines()
    assert taken and all((root / "price_observations" / p).exists() for p in taken)
    clean = DatasetWriter(tmp_path / "clean", ledger.source, ledger.tables.dataset_manifests)
    clean.catch_up()
    count = "SELECT count(*) FROM price_observations"
    assert connect(root).sql(count).fetchall() > connect(clean.root).sql(count).fetchall()
    writer.catch_up()  # finishes the merge: the parts taken in are deleted, none merged twice
    assert not any((root / "price_observations" / p).exists() for p in taken)
    assert dump(root) == dump(clean.root)


def test_an_event_for_a_merged_month_joins_its_month_file(
        ledger: Ledger, shop: Shop, tmp_path: Path) -> None:
    late = Shop(ledger, "https://late.example")  # a second store whose crawls happened in March, recorded after April's
    _months(shop, 60)
    writer = DatasetWriter(ledger.data_dir, ledger.source, ledger.tables.dataset_manifests)
    writer.catch_up()
    (march,) = (writer.root / "price_observations").glob("month=2026-03/part-*.parquet")
    day = "SELECT count(*) FROM price_observations WHERE date = DATE '2026-03-04'"
    (before,) = connect(writer.root).sql(day).fetchall()
    late.now = T0 + timedelta(days=3)
    late.crawl(0, range(2))
    writer.catch_up()
    assert not list((writer.root / "price_observations").glob("date=2026-03-*"))
    (merged,) = (writer.root / "price_observations").glob("month=2026-03/part-*.parquet")
    assert merged != march and not march.exists()
    clean = DatasetWriter(tmp_path / "clean", ledger.source, ledger.tables.dataset_manifests)
    clean.catch_up()
    assert dump(writer.root) == dump(clean.root)
    # two products, two options
    assert connect(writer.root).sql(day).fetchall() == [(before[0] + 4,)]
