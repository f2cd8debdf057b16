"""Replaying an export into an empty event store (`crawl-ledger events import`).

The file is checked twice: once whole before anything is written (so a bad line
refuses the import with nothing written), and again while its rows are inserted in
one transaction (so a file changed between the two reads rolls everything back:
its sha256 must be the one the first read saw). Positions, ids, versions, topics and
states are stored as they were exported, so the envelopes, the audit chain and
therefore every read model rebuilt from them equal the original's.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from itertools import islice
from pathlib import Path

from domain.errors import InvalidInput
from eventstore.base import ImportRow, not_empty
from runtime.admin.export_file import FileSummary, read_rows
from runtime.ledger import Ledger

__all__ = ["import_log", "refuse_unless_empty"]

BATCH = 2000


def import_log(ledger: Ledger, path: Path, expect: str | None = None,
               label: str | None = None) -> FileSummary:
    """Check `path` (an `events export` of a whole log), then insert it into the empty
    event store of `ledger`. Raises `InvalidInput` or `EventStoreNotEmpty`, writing nothing.
    Errors name the file as `label` (default: its path) and the line."""
    refuse_unless_empty(ledger)
    name = label or str(path)
    checked = FileSummary()
    decode = ledger.app.mapper.to_domain_event
    for _ in read_rows(path, decode, checked, name):
        pass
    if expect is not None and expect != checked.chain_hash:
        raise InvalidInput(f"{name}: its audit chain ends in {checked.chain_hash}, "
                           f"not the expected {expect}")
    again = FileSummary()
    rows = read_rows(path, decode, again, name)
    ledger.backend.import_rows(ledger.app.recorder, _batches(rows, checked, again))
    return checked


def refuse_unless_empty(ledger: Ledger) -> None:
    """Raise `EventStoreNotEmpty` (or `InvalidInput`) unless `ledger` can take an import."""
    head = ledger.source.head()
    if head:
        raise not_empty(head, ledger.backend.describe())
    if ledger.projection_position():
        raise InvalidInput("the read models have applied events although the event store "
                           "is empty: import into a new data dir (and a new schema)")


def _batches(rows: Iterator[ImportRow], checked: FileSummary,
             again: FileSummary) -> Iterable[list[ImportRow]]:
    while batch := list(islice(rows, BATCH)):
        yield batch
    if again.sha256 != checked.sha256:  # raised inside the transaction: it rolls back
        raise InvalidInput("the file changed while it was being imported; nothing was imported")
