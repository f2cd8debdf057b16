"""Bounded reads of a stream's history, on both backends: the newest N events and the
events after a position are exactly those of the whole history, and `jobs show` lists
the newest 50 (or `--last N`, or `--all`) and says how many it leaves out."""

from __future__ import annotations

from pathlib import Path

import pytest
from seeded_history import record_seeded_history

from domain import ids
from domain.urls import normalize_url
from ledger.bootstrap import Ledger
from ledger.cli import main
from runtime.history import stream_history


def _job() -> str:
    return str(ids.job_id("catalog", normalize_url("https://alpha.example/p.json")))


def test_the_newest_events_and_those_after_a_position_are_the_history_s(
        ledger: Ledger) -> None:
    record_seeded_history(ledger, cycles=10)
    job = ledger.app.get_job(_job())
    full = stream_history(ledger, job.id)
    assert [e.version for e in full] == list(range(1, job.version + 1))
    assert len(full) > 20

    assert stream_history(ledger, job.id, last=5) == full[-5:]
    assert stream_history(ledger, job.id, last=len(full) + 10) == full
    middle = full[len(full) // 2].position
    after = [e for e in full if e.position > middle]
    assert stream_history(ledger, job.id, after=middle) == after
    assert stream_history(ledger, job.id, after=middle, last=2) == after[-2:]
    assert stream_history(ledger, job.id, after=full[-1].position) == []


def test_jobs_show_lists_the_newest_events_and_says_so(
        ledger: Ledger, store_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("LEDGER_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("LEDGER_STORE", store_url)
    monkeypatch.setenv("COLUMNS", "200")
    record_seeded_history(ledger, cycles=30)
    job = ledger.app.get_job(_job())
    assert job.version > 50
    capsys.readouterr()

    assert main(["jobs", "show", _job()]) == 0
    out = capsys.readouterr().out
    assert f"history (newest 50 of {job.version} events; --all shows every one)" in out

    assert main(["jobs", "show", _job(), "--last", "3", "--json"]) == 0
    shown = capsys.readouterr().out
    assert shown.count('"event_type"') == 3
    assert f'"version":{job.version},' in shown

    assert main(["jobs", "show", _job(), "--all"]) == 0
    out = capsys.readouterr().out
    assert "newest" not in out
    assert "Scheduled" in out  # its first event

    with pytest.raises(SystemExit) as refused:
        main(["jobs", "show", _job(), "--last", "0"])
    assert refused.value.code == 2
    err = capsys.readouterr().err
    assert "bad count '0'" in err
