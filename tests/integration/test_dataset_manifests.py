"""The datasets' manifest on both backends: its truth is the side table
`dataset_manifests` (one row per dataset directory), `manifest.json` its export; a
forged row or export is reported and rebuilt, a directory written before the table
is adopted as it is, and two directories on one store keep their own rows."""

from __future__ import annotations

import json
from pathlib import Path

from test_datasets import Shop, _history

from ledger.bootstrap import Ledger
from projections.datasets import DATASET_ID, DatasetWriter
from projections.parquet_writer import MANIFEST, read_manifest


def written(ledger: Ledger, data_dir: Path | None = None) -> DatasetWriter:
    _history(Shop(ledger), 6)
    writer = DatasetWriter(data_dir or ledger.data_dir, ledger.source,
                           ledger.tables.dataset_manifests, batch_size=25)
    writer.catch_up()
    return writer


def mtimes(root: Path) -> dict[str, int]:
    return {str(p.relative_to(root)): p.stat().st_mtime_ns for p in root.rglob("*.parquet")}


def test_the_table_is_the_truth_and_the_file_its_export(ledger: Ledger) -> None:
    writer = written(ledger)
    head, ident = ledger.source.head(), writer.dataset_id()
    assert ident is not None and head > 25  # several batches
    row = ledger.tables.dataset_manifests.load(ident)
    assert row is not None and row.position == head == writer.position()
    export = read_manifest(writer.root)
    assert (export.position, export.state) == (row.position, json.loads(row.state))
    (writer.root / MANIFEST).unlink()  # the export lost: the table still says where it is
    before = mtimes(writer.root)
    assert writer.integrity_problems() == [] and writer.catch_up() == 0
    assert writer.position() == head and mtimes(writer.root) == before  # nothing rebuilt


def test_a_forged_row_is_reported_and_repaired(ledger: Ledger) -> None:
    writer = written(ledger)
    head, ident = ledger.source.head(), writer.dataset_id()
    assert ident is not None
    honest = ledger.tables.dataset_manifests.load(ident)
    assert honest is not None
    ledger.tables.dataset_manifests.save(ident, head + 1000, honest.state)  # skips what comes
    assert writer.integrity_problems() == [
        f"dataset_manifests: position {head + 1000} is beyond the ledger's last event ({head})"]
    assert writer.repair()  # reported, then rebuilt from the log
    assert writer.position() == head and writer.integrity_problems() == []
    ledger.tables.dataset_manifests.save(ident, 10, honest.state)  # would duplicate rows
    problems = writer.integrity_problems()
    assert problems and all("beyond the manifest's 10" in p for p in problems)
    assert writer.repair() == problems and writer.position() == head


def test_a_forged_export_is_reported_and_rewritten(ledger: Ledger) -> None:
    writer = written(ledger)
    path = writer.root / MANIFEST
    forged = json.loads(path.read_text()) | {"position": 3}
    path.write_text(json.dumps(forged))
    assert writer.integrity_problems() == [f"{MANIFEST}: changed since it was written "
                                           "(sha256 differs)"]
    writer.catch_up()  # rebuilt from the log rather than trust a file it did not write
    assert read_manifest(writer.root).position == ledger.source.head() == writer.position()


def test_a_directory_written_before_the_table_is_adopted_as_it_is(ledger: Ledger) -> None:
    writer = written(ledger)
    ident = writer.dataset_id()
    assert ident is not None
    ledger.tables.dataset_manifests.forget(ident)  # as an older version left it: file only
    (writer.root / DATASET_ID).unlink()
    before, head = mtimes(writer.root), ledger.source.head()
    assert writer.position() == head  # read from manifest.json
    assert writer.catch_up() == 0 and mtimes(writer.root) == before  # adopted, not rebuilt
    adopted = writer.dataset_id()
    assert adopted is not None and adopted != ident
    row = ledger.tables.dataset_manifests.load(adopted)
    assert row is not None and row.position == head


def test_two_directories_on_one_store_keep_their_own_rows(ledger: Ledger, tmp_path: Path) -> None:
    first = written(ledger)
    second = DatasetWriter(tmp_path / "second", ledger.source, ledger.tables.dataset_manifests,
                           batch_size=10)
    assert second.position() == 0 and second.dataset_id() is None
    second.catch_up()
    assert first.dataset_id() != second.dataset_id()
    assert first.position() == second.position() == ledger.source.head()
    second.rebuild()  # clears its own row and files only
    assert first.integrity_problems() == [] and first.position() == ledger.source.head()
