"""Derived data that behaviour trusts is checked against the log: a forged aggregate
snapshot (both backends) and an edited or planted Parquet dataset file are detected and
reported (`audit verify`), and rebuilt only by `audit repair` — never silently used."""

from __future__ import annotations

import dataclasses
import json
import subprocess
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from backends import LOOPBACK_ENV
from seeded_history import record_prices

from domain.store import Store
from ledger.bootstrap import bootstrap
from ledger.settings import Settings
from projections.datasets import DatasetWriter
from runtime.admin.integrity import check_snapshots, drop_snapshots
from runtime.ledger import Ledger

T0 = datetime(2026, 3, 1, tzinfo=UTC)


def store_with_snapshot(ledger: Ledger) -> tuple[object, int]:
    app = ledger.app
    store = app.register_store(name="S", base_url="https://s.example", platform="generic", now=T0)
    for i in range(45):
        app.change_store_policy(store, crawl_delay=float(i % 7 + 1), now=T0 + timedelta(minutes=i))
    snapshot = ledger.backend.select_latest(app.snapshots.recorder, [store])[store]
    return store, snapshot.originator_version


def forge_snapshot(ledger: Ledger, store: object, delay: float) -> None:
    recorder = ledger.app.snapshots.recorder
    stored = ledger.backend.select_latest(recorder, [store])[store]
    data = json.loads(stored.state)
    data["state"]["policy"]["crawl_delay"] = delay
    forged = dataclasses.replace(stored, state=json.dumps(data).encode())
    ledger.backend.delete_records(recorder, [store])
    recorder.insert_events([forged])


def test_a_forged_aggregate_snapshot_is_detected_then_dropped(ledger: Ledger) -> None:
    store, version = store_with_snapshot(ledger)
    assert check_snapshots(ledger) == []  # an honest snapshot passes
    truth = ledger.app.repository.get(store).policy.crawl_delay
    forge_snapshot(ledger, store, 999.0)
    problems = check_snapshots(ledger)
    assert [(p.aggregate_id, p.version) for p in problems] == [(store, version)], problems
    assert "policy" in problems[0].why
    assert store in ledger.backend.select_latest(ledger.app.snapshots.recorder, [store])
    assert drop_snapshots(ledger, problems) == 1
    assert ledger.backend.select_latest(ledger.app.snapshots.recorder, [store]) == {}
    loaded: Store = ledger.app.repository.get(store)
    assert loaded.policy.crawl_delay == truth != 999.0


def prices_in(writer: DatasetWriter) -> list[str]:
    files = sorted((writer.root / "price_observations").rglob("*.parquet"))
    rows = [r for f in files for r in pq.read_table(f).to_pylist()]
    return sorted(str(r["price"]) for r in rows)


def test_an_edited_dataset_file_is_detected_and_rebuilt(ledger: Ledger) -> None:
    record_prices(ledger, ["20.00", "15.00", "18.00"])
    writer = DatasetWriter(ledger.data_dir, ledger.source, ledger.tables.dataset_manifests)
    writer.catch_up()
    honest = prices_in(writer)
    assert writer.problems == []
    (target,) = sorted((writer.root / "price_observations").rglob("*.parquet"))
    table = pq.read_table(target)
    price = table.schema.get_field_index("price")
    forged = table.set_column(price, table.schema.field(price),
                              pa.array([Decimal("1.0000")] * table.num_rows,
                                       type=table.schema.field(price).type))
    pq.write_table(forged, target)
    assert prices_in(writer) != honest
    planted = writer.root / "price_observations" / "date=2026-03-09" / "part-9-9.parquet"
    planted.parent.mkdir()
    pq.write_table(table, planted)
    writer = DatasetWriter(ledger.data_dir, ledger.source, ledger.tables.dataset_manifests)  # a fresh process's writer
    writer.catch_up()
    assert any("changed since it was written" in p for p in writer.problems), writer.problems
    assert any("not written by the dataset writer" in p for p in writer.problems)
    assert prices_in(writer) == honest and not planted.exists()
    writer.catch_up()
    assert writer.problems == []


def test_audit_verify_reports_and_repairs_derived_data(
        tmp_path: Path, crawl_ledger_bin: str, cli_env: Callable[..., dict[str, str]]) -> None:
    data = tmp_path / "data"
    ledger = bootstrap(Settings.from_env({**LOOPBACK_ENV, "LEDGER_DATA_DIR": str(data)}))
    try:
        store, _ = store_with_snapshot(ledger)
        forge_snapshot(ledger, store, 999.0)
    finally:
        ledger.close()

    def audit(action: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([crawl_ledger_bin, "audit", action], env=cli_env(data),
                              capture_output=True, text=True, timeout=60, check=False)

    for _ in range(2):  # verify reports and changes nothing: the second finds the same
        found = audit("verify")
        assert found.returncode == 1, found.stdout + found.stderr
        assert "TAMPERED (derived data; `crawl-ledger audit repair` rebuilds it): snapshot of " \
            f"{store} at version" in found.stdout
    repaired = audit("repair")
    assert repaired.returncode == 0, repaired.stdout + repaired.stderr
    assert f"repaired: snapshot of {store}" in repaired.stdout
    after = audit("verify")
    assert after.returncode == 0 and "TAMPERED" not in after.stdout, after.stdout
