"""`crawl-ledger audit checkpoint|verify` as an auditor runs it."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from ledger import cli


def test_checkpoint_then_verify_then_catch_a_rewrite(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("LEDGER_DATA_DIR", str(tmp_path))
    monkeypatch.delenv("LEDGER_STORE", raising=False)
    assert cli.main(["stores", "add", "Shop", "https://shop.example", "--platform", "shopify"]) == 0
    assert cli.main(["audit", "checkpoint", "--json"]) == 0
    head = json.loads(capsys.readouterr().out.splitlines()[-1])
    assert head["events"] == 1 and len(head["chain_hash"]) == 64
    assert cli.main(["audit", "verify", "--expect", head["chain_hash"]]) == 0
    assert "verified: 1 events" in capsys.readouterr().out

    with sqlite3.connect(tmp_path / "ledger.sqlite") as db:  # a rewrite behind the ledger's back
        db.execute("UPDATE stored_events SET state = CAST(replace(CAST(state AS TEXT), "
                   "'\"Shop\"', '\"Sh0p\"') AS BLOB)")
    assert cli.main(["audit", "verify", "--expect", head["chain_hash"]]) == 1
    assert capsys.readouterr().out.startswith("TAMPERED: the log changed between positions 0 and 1")
