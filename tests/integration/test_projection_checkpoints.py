"""Projection checkpoints on both backends: a rebuild from the latest checkpoint gives
exactly the rows of a rebuild from position 0 (on a seeded history with price changes,
stock runs and failures, recorded before and after the checkpoint); a checkpoint whose
chain link or tables were altered is refused; one taken for other read-model
definitions is ignored."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from seeded_history import record_seeded_history

from ledger.bootstrap import Ledger
from ledger.cli import main
from projections import checkpoints, read_models
from projections.framework import table_rows
from projections.rebuild import rebuild_from_checkpoint


def tables(ledger: Ledger) -> dict[str, list[dict[str, Any]]]:
    return {t.name: table_rows(ledger.db, t, "") for p in read_models() for t in p.tables}


@pytest.fixture
def checkpointed(ledger: Ledger, store_url: str, tmp_path: Path,
                 monkeypatch: pytest.MonkeyPatch) -> tuple[Ledger, int]:
    """A history, a checkpoint taken by the CLI, then more history after it."""
    monkeypatch.setenv("LEDGER_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("LEDGER_STORE", store_url)
    record_seeded_history(ledger, cycles=10, seed=1)
    assert main(["projections", "checkpoint"]) == 0
    (point,) = checkpoints.checkpoints(ledger.db)
    assert point.position == ledger.source.head()
    record_seeded_history(ledger, cycles=10, seed=2, first_cycle=10)
    ledger.catch_up()
    assert ledger.source.head() > point.position + 200
    return ledger, point.position


def test_rebuild_from_checkpoint_equals_a_rebuild_from_zero(
        checkpointed: tuple[Ledger, int], capsys: pytest.CaptureFixture[str]) -> None:
    ledger, position = checkpointed
    live = tables(ledger)
    objects = ledger.db.object_names()
    stock = live["stock_status"]
    assert {r["status"] for r in stock} >= {"in_stock", "out_of_stock"}
    assert any(r["times_out"] for r in stock)
    assert any(r["last_error_kind"] for r in live["job_status"])
    capsys.readouterr()

    assert main(["projections", "rebuild"]) == 0
    out = capsys.readouterr().out
    replayed = ledger.source.head() - position
    assert f"from checkpoint 1 at position {position}: {replayed} events replayed" in out
    assert tables(ledger) == live
    assert ledger.db.object_names() == objects  # keys, indexes, full-text index: all rebuilt

    assert main(["projections", "rebuild", "--from-zero"]) == 0
    assert f"from position 0: {ledger.source.head()} events replayed" in capsys.readouterr().out
    assert tables(ledger) == live

    assert main(["projections", "rebuild", "--verify"]) == 0
    out = capsys.readouterr().out
    assert ("verified: the live read models and the rebuild from the latest checkpoint equal "
            "a replay from position 0") in out
    assert tables(ledger) == live


def test_a_checkpoint_with_another_chain_link_is_refused(
        checkpointed: tuple[Ledger, int], capsys: pytest.CaptureFixture[str]) -> None:
    ledger, position = checkpointed
    live = tables(ledger)
    with ledger.db.transaction() as tx:
        tx.execute(f"UPDATE {checkpoints.TABLE} SET link = ?", ("00" * 32,))
    capsys.readouterr()
    assert main(["projections", "rebuild"]) == 0
    out = capsys.readouterr().out
    refusals = [line for line in out.splitlines() if "refused" in line]
    assert refusals == [f"checkpoint 1 at position {position} refused: its chain link does not "
                        "match the event log's at that position (taken from another log, or the "
                        "log was rewritten)"]
    assert f"from position 0: {ledger.source.head()} events replayed" in out
    assert tables(ledger) == live


def test_a_checkpoint_with_an_altered_table_is_refused(
        checkpointed: tuple[Ledger, int], capsys: pytest.CaptureFixture[str]) -> None:
    ledger, position = checkpointed
    live = tables(ledger)
    (point,) = checkpoints.checkpoints(ledger.db)
    good = checkpoints.check(ledger.db, point, read_models(), ledger.chain.link_at)
    assert good is not None
    altered = good["current_products"].slice(1)  # a product row left out
    blob, _ = checkpoints._parquet(altered)
    with ledger.db.transaction() as tx:
        tx.execute(f"UPDATE {checkpoints.PARTS} SET data = ? WHERE name = ?",
                   (blob, "current_products"))
    capsys.readouterr()
    assert main(["projections", "rebuild"]) == 0
    out = capsys.readouterr().out
    assert (f"checkpoint 1 at position {position} refused: its table current_products does not "
            "match its digest (altered or missing)") in out
    assert "from position 0" in out
    assert tables(ledger) == live


def test_a_checkpoint_older_than_a_schema_change_is_ignored(
        checkpointed: tuple[Ledger, int]) -> None:
    ledger, position = checkpointed
    live = tables(ledger)
    lines: list[str] = []

    def changed(prefix: str) -> list[Any]:
        models = read_models(prefix)
        models[2].checkpoint_version += 1  # its handlers write other rows now
        return models

    done = rebuild_from_checkpoint(ledger.source, ledger.db, changed, ledger.chain.link_at,
                                   lines.append)
    assert done.checkpoint is None and done.replayed == ledger.source.head()
    assert lines == [f"checkpoint 1 at position {position} ignored: taken before the read "
                     "models' definitions changed"]
    assert tables(ledger) == live

    lines.clear()
    done = rebuild_from_checkpoint(ledger.source, ledger.db, read_models, ledger.chain.link_at,
                                   lines.append)
    assert done.checkpoint is not None and done.checkpoint.position == position
    assert lines == [] and tables(ledger) == live


def test_the_projector_takes_a_checkpoint_every_n_events(ledger: Ledger) -> None:
    ledger.checkpoint_every = 100
    record_seeded_history(ledger, cycles=4, seed=1)
    ledger.catch_up()
    first = checkpoints.checkpoints(ledger.db)
    assert [p.position for p in first] == [ledger.source.head()]
    record_seeded_history(ledger, cycles=1, seed=2, first_cycle=4)
    ledger.catch_up()  # fewer than 100 events since: none taken
    assert checkpoints.checkpoints(ledger.db) == first
    record_seeded_history(ledger, cycles=6, seed=3, first_cycle=5)
    ledger.catch_up()
    points = checkpoints.checkpoints(ledger.db)
    assert [p.position for p in points] == [ledger.source.head(), first[0].position]
