"""The Parquet datasets' manifests in the read-model database (`DatasetManifestTable`)."""

from __future__ import annotations

from eventstore.database import Database
from eventstore.side_tables.ports import StoredManifest
from eventstore.side_tables.schema import DATASET_MANIFESTS

__all__ = ["SqlDatasetManifests"]


class SqlDatasetManifests:
    def __init__(self, db: Database) -> None:
        self.db = db

    def load(self, dataset_id: str) -> StoredManifest | None:
        rows = self.db.query(f"SELECT position, state FROM {DATASET_MANIFESTS} "
                             "WHERE dataset_id = ?", (dataset_id,))
        return StoredManifest(int(rows[0]["position"]), str(rows[0]["state"])) if rows else None

    def save(self, dataset_id: str, position: int, state: str) -> None:
        with self.db.transaction() as tx:
            tx.execute(f"INSERT INTO {DATASET_MANIFESTS} (dataset_id, position, state) "
                       "VALUES (?, ?, ?) ON CONFLICT (dataset_id) DO UPDATE SET "
                       "position = excluded.position, state = excluded.state",
                       (dataset_id, position, state))

    def forget(self, dataset_id: str) -> None:
        with self.db.transaction() as tx:
            tx.execute(f"DELETE FROM {DATASET_MANIFESTS} WHERE dataset_id = ?", (dataset_id,))
