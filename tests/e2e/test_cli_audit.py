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
    assert capsys.readouterr().out.startswith(
        "TAMPERED: the event at position 1 does not match its chain link")


def test_export_the_log_and_verify_it_offline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("LEDGER_DATA_DIR", str(tmp_path))
    monkeypatch.delenv("LEDGER_STORE", raising=False)
    ids = []
    for name in ("Shop", "Other"):
        assert cli.main(["stores", "add", name, f"https://{name.lower()}.example",
                         "--platform", "shopify", "--json"]) == 0
        ids.append(json.loads(capsys.readouterr().out)["id"])
    assert cli.main(["stores", "disable", ids[0], "--reason", "asked us to stop"]) == 0
    assert cli.main(["audit", "checkpoint", "--json"]) == 0
    head = json.loads(capsys.readouterr().out.splitlines()[-1])

    log = tmp_path / "log.jsonl"
    assert cli.main(["events", "export", "-o", str(log)]) == 0
    assert f"audit chain hash at position {head['position']}: {head['chain_hash']}" \
        in capsys.readouterr().err
    envelopes = [json.loads(line) for line in log.read_text().splitlines()]
    assert [e["position"] for e in envelopes] == list(range(1, head["events"] + 1))
    assert cli.main(["audit", "verify-file", str(log), "--expect", head["chain_hash"]]) == 0
    assert "(matches --expect)" in capsys.readouterr().out

    one = tmp_path / "one.jsonl"
    assert cli.main(["events", "export", "-o", str(one), "--stream", ids[0]]) == 0
    stream = [json.loads(line) for line in one.read_text().splitlines()]
    assert [(e["stream_id"], e["version"]) for e in stream] == [(ids[0], 1), (ids[0], 2)]
    assert stream == [e for e in envelopes if e["stream_id"] == ids[0]]

    # one edited byte in the auditor's copy breaks the chain
    log.write_text(log.read_text().replace('"Other"', '"0ther"'))
    assert cli.main(["audit", "verify-file", str(log), "--expect", head["chain_hash"]]) == 1
    assert capsys.readouterr().out.startswith("MISMATCH")


@pytest.mark.parametrize("args, message", [
    (["--stream", "00000000-0000-0000-0000-000000000000"], "no events for stream"),
    (["--stream", "shop"], "is not an aggregate id"),
    (["--until", "0"], "--until must be >= 1"),
])
def test_export_refusals_write_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                       capsys: pytest.CaptureFixture[str], args: list[str],
                                       message: str) -> None:
    monkeypatch.setenv("LEDGER_DATA_DIR", str(tmp_path))
    monkeypatch.delenv("LEDGER_STORE", raising=False)
    assert cli.main(["stores", "add", "Shop", "https://shop.example", "--platform", "shopify"]) == 0
    out = tmp_path / "out.jsonl"
    assert cli.main(["events", "export", "-o", str(out), *args]) == 2
    assert message in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir() if "out" in p.name) == []
