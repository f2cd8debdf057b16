"""Creating the read models' tables: nothing is run when every table, index and search
object exists (one query finds so, once a process); a missing one is created again."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from ledger.bootstrap import Ledger
from projections import read_models
from projections.db import Tx
from projections.framework import POSITIONS, create_all


def test_existing_tables_cost_one_query_and_a_missing_index_is_made_again(
        ledger: Ledger, monkeypatch: pytest.MonkeyPatch) -> None:
    models = read_models()
    wanted = {POSITIONS} | {n for p in models for t in p.tables
                            for n in t.objects(ledger.db.dialect, p.prefix)}
    assert wanted <= ledger.db.object_names()
    opened: list[int] = []
    transaction = ledger.db.transaction

    @contextmanager
    def counting() -> Iterator[Tx]:
        opened.append(1)
        with transaction() as tx:
            yield tx

    monkeypatch.setattr(ledger.db, "transaction", counting)
    create_all(ledger.db, models)
    assert opened == []

    index = min(n for n in wanted if n.startswith("job_status_"))  # one of its indexes
    with transaction() as tx:
        tx.execute(f"DROP INDEX {index}")
    assert index not in ledger.db.object_names()
    create_all(ledger.db, models)  # this process created them: it does not ask again
    assert opened == []
    ledger.db.created.clear()  # as a new process
    create_all(ledger.db, models)
    assert opened == [1]
    assert index in ledger.db.object_names()
