"""The dataset projection: the event log as Parquet datasets for DuckDB.

Datasets (see `parquet_writer` for the schemas and the crash-safe layout):

- `price_observations`: one row per observed offer (`Product.Observed`, and each
  product of a `Sightings.Recorded`: `domain.sightings`), denormalised with the
  store name and the product's details, with lineage (a sighting's `event_id` is
  its crawl event's id and the product id);
- `stock_events`: `Product.Missed` / `WentOutOfStock` / `BackInStock`;
- `price_changes`: one row per `Product.PriceChanged` whose regular price
  moved (both old and new set), with the previous observation's time — so
  DuckDB needs no window over every observation to list changes;
- `job_runs`: one row per finished attempt (`CrawlJob.Leased` joined with its
  `Succeeded` / `Failed` / `LeaseExpired` / `Cancelled`);
- `job_states`: one row per `CrawlJob` event that sets the job's state or next
  run, with both as they are after it (`projections.dataset_jobs`).

To denormalise, the projection keeps a small state (store names, product
details, jobs, open leases) and persists it in the manifest with the
position, so a restart continues exactly where the last batch ended and a
rebuild from position 0 yields the same rows. A manifest written by an older
format (no `format` in its state) is rebuilt from position 0 on the next
catch-up, so new datasets never start half-way through the log.

The manifest's source of truth is the side table `dataset_manifests`
(`DatasetManifestTable`), one row per dataset directory, keyed by the random id in
the directory's `dataset-id` file; each batch's row is committed after its files
are in place. `manifest.json` beside the files is an export of the row, written at
the end of each catch-up that wrote something, for whoever holds only the folder; a directory written before the
table has only the file, which a catch-up adopts into the table. The file's sha256
is recorded like every file's, so an edited export is reported
(`projections.manifest_check`).

After each catch-up the writer compacts closed date partitions, merges closed
dates into month files (see `compaction`) and refreshes the materialised
`products_latest` (see `parquet_writer`).
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import shutil
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from decimal import ROUND_HALF_EVEN, Decimal
from pathlib import Path
from typing import Any

from domain.envelope import Envelope
from domain.sightings import RECORDED, SIGHTED, sighted
from eventstore.side_tables import DatasetManifestTable, StoredManifest
from projections.checksums import verify as verify_checksums
from projections.compaction import compact, discard_superseded
from projections.dataset_jobs import JOB_STATE_EVENTS, JobRows
from projections.manifest_check import manifest_problems
from projections.parquet_writer import (
    MANIFEST,
    Manifest,
    discard_beyond,
    read_manifest,
    refresh_latest,
    timestamp,
    write_batch,
    write_manifest,
)
from projections.source import EventSource

__all__ = ["DATASET_ID", "DatasetRows", "DatasetWriter", "money", "timestamp"]

#: the file naming a dataset directory's row in `dataset_manifests`
DATASET_ID = "dataset-id"
#: what `_clear` keeps: the writers' lock and the directory's id
_KEPT = frozenset({".lock", DATASET_ID})

log = logging.getLogger(__name__)

Rows = dict[str, dict[str, list[dict[str, Any]]]]
Progress = Callable[[int, int], None]
_MONEY_STEP = Decimal("0.0001")
_STOCK_TYPES = {
    "Product.Missed": "missed",
    "Product.WentOutOfStock": "went_out_of_stock",
    "Product.BackInStock": "back_in_stock",
}
_JOB_EVENTS = frozenset({*JOB_STATE_EVENTS, "CrawlJob.Scheduled", "CrawlJob.Leased"})

def money(value: Any) -> Decimal | None:
    if value is None or value == "":
        return None
    return Decimal(str(value)).quantize(_MONEY_STEP, rounding=ROUND_HALF_EVEN)


#: bumped when a dataset is added or a row changes meaning (older datasets are rebuilt)
FORMAT = 4


def empty_state() -> dict[str, Any]:
    return {"format": FORMAT, "stores": {}, "products": {}, "jobs": {}, "leases": {},
            "job_states": {}}


def current_format(manifest: Manifest) -> bool:
    return manifest.position == 0 or (manifest.state or {}).get("format") == FORMAT


class DatasetRows(JobRows):
    """Turns envelopes into dataset rows, keeping the state needed to denormalise."""

    def __init__(self, state: dict[str, Any] | None = None) -> None:
        self.state = state or empty_state()
        self.rows: Rows = {}

    def take(self) -> Rows:
        rows, self.rows = self.rows, {}
        return rows

    def _add(self, dataset: str, at: datetime, row: dict[str, Any]) -> None:
        by_date = self.rows.setdefault(dataset, {})
        by_date.setdefault(at.strftime("%Y-%m-%d"), []).append(row)

    def apply(self, env: Envelope) -> None:
        kind = env.event_type
        if kind == "Store.Registered":
            self.state["stores"][env.stream_id] = env.payload.get("name")
        elif kind == "Product.Discovered":
            self._discovered(env)
        elif kind == "Product.DetailsChanged":
            self._details_changed(env)
        elif kind == "Product.Observed" or kind == SIGHTED:
            self._observed(env)
        elif kind == RECORDED:  # a crawl's unchanged observations: a row set each
            for one in sighted(env):
                self._observed(one)
        elif kind == "Product.PriceChanged":
            self._price_changed(env)
        elif kind in _STOCK_TYPES:
            self._stock(env)
        elif kind in _JOB_EVENTS:
            self._job_event(env)

    # products -----------------------------------------------------------
    def _discovered(self, env: Envelope) -> None:
        p = env.payload
        self.state["products"][env.stream_id] = {
            "store_id": p.get("store_id"), "provider_product_id": p.get("provider_product_id"),
            "name": p.get("name"), "brand": p.get("brand"), "category": p.get("category"),
        }

    def _details_changed(self, env: Envelope) -> None:
        product = self.state["products"].setdefault(env.stream_id, {})
        for name in ("name", "brand", "category"):
            if name in env.payload.get("fields", {}):
                product[name] = env.payload["fields"][name]

    def _product_columns(self, product_id: str) -> dict[str, Any]:
        product = self.state["products"].get(product_id, {})
        store_id = product.get("store_id")
        return {
            "store_id": store_id, "store_name": self.state["stores"].get(store_id),
            "product_id": product_id, "provider_product_id": product.get("provider_product_id"),
            "name": product.get("name"),
        }

    def _observed(self, env: Envelope) -> None:
        p = env.payload
        at = timestamp(p["observed_at"])
        product = self.state["products"].setdefault(env.stream_id, {})
        product["seen"] = p["observed_at"]  # a later change's previous_at
        common = dict(
            self._product_columns(env.stream_id), observed_at=at, brand=product.get("brand"),
            category=product.get("category"), event_id=env.event_id, position=env.position,
            job_id=p.get("job_id"), attempt=p.get("attempt"),
            extractor_version=p.get("extractor_version"), content_hash=p.get("content_hash"),
        )
        for offer in p.get("offers") or [{}]:
            self._add("price_observations", at, dict(
                common, option=offer.get("option"), price=money(offer.get("price")),
                special_price=money(offer.get("special_price")),
                currency=offer.get("currency"), pricing_type=offer.get("pricing_type"),
                availability=offer.get("availability") or p.get("availability"),
                quantity=_first_set(offer.get("quantity"), p.get("quantity")),
            ))

    def _price_changed(self, env: Envelope) -> None:
        p = env.payload
        old, new = money(p.get("old")), money(p.get("new"))
        if old is None or new is None or old == new:
            return  # a special-price-only change, or a price appearing/vanishing
        at = timestamp(p["at"])
        product = self.state["products"].get(env.stream_id, {})
        seen = product.get("seen")
        self._add("price_changes", at, dict(
            self._product_columns(env.stream_id), changed_at=at,
            previous_at=timestamp(seen) if seen else None, brand=product.get("brand"),
            category=product.get("category"), option=p.get("option"),
            pricing_type=p.get("pricing_type"), currency=p.get("currency"),
            old_price=old, new_price=new, old_special_price=money(p.get("old_special")),
            new_special_price=money(p.get("new_special")), event_id=env.event_id,
            position=env.position, job_id=p.get("job_id"),
        ))

    def _stock(self, env: Envelope) -> None:
        p = env.payload
        at = timestamp(p["at"])
        self._add("stock_events", at, dict(
            self._product_columns(env.stream_id), occurred_at=at,
            event_type=_STOCK_TYPES[env.event_type],
            reason=p.get("reason"), consecutive_misses=p.get("consecutive_misses"),
            job_id=p.get("job_id"), event_id=env.event_id, position=env.position,
        ))


def _first_set(*values: Any) -> Any:
    return next((v for v in values if v is not None), None)


class DatasetWriter:
    """Catches the Parquet datasets up with an event source, batch by batch.

    `before_manifest` (tests only) runs after a batch's files are renamed into
    place and before the manifest records the batch — where a crash hurts most.
    """

    def __init__(self, data_dir: Path, source: EventSource, manifests: DatasetManifestTable,
                 batch_size: int = 5000,
                 before_manifest: Callable[[int], None] | None = None) -> None:
        """`manifests`: the side table of the datasets' manifests (`ledger.tables`)."""
        self.root = Path(data_dir) / "datasets"
        self.source = source
        self.manifests = manifests
        self.batch_size = batch_size
        self.before_manifest = before_manifest
        #: what the last catch-up's integrity check found (then rebuilt)
        self.problems: list[str] = []
        self._verified: dict[str, tuple[int, int]] = {}

    def position(self) -> int:
        return self.manifest().position

    def manifest(self) -> Manifest:
        """What the datasets hold: this directory's row of the table; for a directory
        written before the table, its `manifest.json` (the next catch-up adopts it)."""
        stored = self._row()
        if stored is not None:
            return Manifest(stored.position, json.loads(stored.state))
        try:
            return read_manifest(self.root)
        except (OSError, ValueError, KeyError, TypeError):
            return Manifest()  # unreadable: `integrity_problems` reports it

    def dataset_id(self) -> str | None:
        """The directory's id in the table (None before its first batch)."""
        try:
            return (self.root / DATASET_ID).read_text(encoding="utf-8").strip() or None
        except FileNotFoundError:
            return None

    def integrity_problems(self) -> list[str]:
        """Dataset files the writer did not write (`projections.checksums`), and a
        manifest (the table's row, its `manifest.json` export) that disagrees with its
        files or the ledger (`projections.manifest_check`)."""
        stored = self._row()
        return (verify_checksums(self.root, self._verified)
                + manifest_problems(self.root, self.source.head(),
                                    None if stored is None else stored.position))

    def catch_up(self, progress: Progress | None = None) -> int:
        """Write everything recorded so far; returns the number of events read.

        Datasets with `integrity_problems` are never used: they are rebuilt from
        the log, and `self.problems` says what was found."""
        with self._locked():
            self.problems = self._discard_if_damaged()
            return self._catch_up(progress)

    def repair(self) -> list[str]:
        """`integrity_problems`, read under the writer's lock (never mid-write); the
        datasets are rebuilt from the log when there are any."""
        with self._locked():
            problems = self._discard_if_damaged()
            if problems:
                self._catch_up(None)
            return problems

    def _discard_if_damaged(self) -> list[str]:
        """With the lock held: delete the datasets if they have `integrity_problems`."""
        problems = self.integrity_problems()
        if problems:
            log.warning("datasets rebuilt from the event log: %s", "; ".join(problems))
            self._clear()
            self._verified.clear()
        return problems

    def rebuild(self, progress: Progress | None = None) -> int:
        """Delete the datasets and replay the whole log from position 0."""
        with self._locked():
            self._clear()
            self._verified.clear()
            return self._catch_up(progress)

    def compact(self) -> None:
        """Compact closed date partitions and refresh `products_latest` (idempotent).

        `catch_up` and `rebuild` already do this after writing; here for the
        bench and for dataset dirs written before compaction existed.
        """
        with self._locked():
            self._tidy(self.manifest().position)

    def _clear(self) -> None:
        for child in self.root.iterdir():
            if child.name not in _KEPT:
                shutil.rmtree(child) if child.is_dir() else child.unlink()
        ident = self.dataset_id()
        if ident is not None:
            self.manifests.forget(ident)

    def _row(self) -> StoredManifest | None:
        ident = self.dataset_id()
        return None if ident is None else self.manifests.load(ident)

    def _save(self, manifest: Manifest) -> None:
        """The table's row: the truth a catch-up resumes from (every batch's)."""
        state = json.dumps(manifest.state, sort_keys=True, separators=(",", ":"))
        self.manifests.save(self._own_id(), manifest.position, state)

    def _export(self, manifest: Manifest) -> None:
        """`manifest.json`: the row as it stands, beside the files (once a catch-up:
        the state can be tens of megabytes)."""
        write_manifest(self.root, manifest)

    def _own_id(self) -> str:
        ident = self.dataset_id()
        if ident is None:
            ident = uuid.uuid4().hex
            tmp = self.root / f"{DATASET_ID}.tmp"
            tmp.write_text(ident + "\n", encoding="utf-8")
            os.replace(tmp, self.root / DATASET_ID)
        return ident

    def _catch_up(self, progress: Progress | None) -> int:
        manifest = self.manifest()
        if not current_format(manifest):
            self._clear()
            manifest = Manifest()
        elif manifest.position and self._row() is None:
            self._save(manifest)  # a directory written before the table: adopted
        discard_beyond(self.root, manifest.position)
        discard_superseded(self.root)
        builder = DatasetRows(manifest.state)
        position, total, head = manifest.position, 0, self.source.head()
        while True:
            envelopes = self.source.read(position, self.batch_size)
            if envelopes:
                position = self._write(builder, envelopes)
            total += len(envelopes)
            if progress is not None:
                progress(position, max(head, position))
            if len(envelopes) < self.batch_size:
                self._tidy(position, compacting=total > 0)
                if position and (total or not (self.root / MANIFEST).exists()):
                    self._export(Manifest(position, builder.state))
                return total

    def _tidy(self, position: int, compacting: bool = True) -> None:
        # compaction checks one footer per partition: skipped when nothing was written
        if compacting:
            compact(self.root)
        refresh_latest(self.root, position)

    def _write(self, builder: DatasetRows, envelopes: Sequence[Envelope]) -> int:
        for env in envelopes:
            builder.apply(env)
        first, last = envelopes[0].position, envelopes[-1].position

        def commit() -> None:
            if self.before_manifest is not None:
                self.before_manifest(last)
            self._save(Manifest(last, builder.state))

        write_batch(self.root, first, last, builder.take(), commit)
        return last

    @contextmanager
    def _locked(self) -> Iterator[None]:
        """One writer per dataset dir (the CLI and the demo may both catch up)."""
        self.root.mkdir(parents=True, exist_ok=True)
        with open(self.root / ".lock", "w") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)
