"""`crawl-ledger events import`: an export replayed into an empty store, on both backends.

The import keeps positions, ids, versions and states, so the read models built from
it equal the original's and the audit chain ends in the same hash; every damaged
file (gap, reorder, edit, bad JSON, unknown event type) and a non-empty store are
refused with one line, exit 2, and nothing written.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import backends
import pytest
from export_damage import drop as _drop
from export_damage import edit_payload as _edit_payload
from export_damage import swap as _swap
from seeded_history import record_seeded_history

from ledger import cli

Lines = list[str]


@pytest.fixture
def exported(store_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
             capsys: pytest.CaptureFixture[str]) -> Iterator[tuple[Path, str]]:
    """A seeded ledger on the backend, exported; yields (file, audit chain hash)."""
    with backends.open_ledger(store_url, tmp_path / "source") as ledger:
        record_seeded_history(ledger, cycles=10, seed=3)
    use(monkeypatch, store_url, tmp_path / "source")
    log = tmp_path / "log.jsonl"
    assert cli.main(["events", "export", "-o", str(log)]) == 0
    chain = capsys.readouterr().err.split("audit chain hash at position")[1].split(": ")[1].strip()
    yield log, chain


def use(monkeypatch: pytest.MonkeyPatch, url: str, where: Path) -> None:
    monkeypatch.setenv("LEDGER_DATA_DIR", str(where / "data"))
    monkeypatch.setenv("LEDGER_STORE", url)


@pytest.fixture
def target(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A second fresh, empty store on the same backend as `store_url`."""
    backend = "postgres" if request.node.callspec.params["store_url"] == "postgres" else "sqlite"
    with backends.store_url(backend, tmp_path / "target") as url:
        yield url


def outputs(capsys: pytest.CaptureFixture[str]) -> dict[str, str]:
    capsys.readouterr()
    found = {}
    for command in (["products", "list", "--json"], ["jobs", "list", "--json"],
                    ["stores", "list", "--json"]):
        assert cli.main(command) == 0
        found[command[0]] = capsys.readouterr().out
    return found


def test_import_gives_equal_read_models_and_the_same_audit_chain(
        exported: tuple[Path, str], store_url: str, target: str, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    log, chain = exported
    original = outputs(capsys)
    assert json.loads(original["products"]) and json.loads(original["jobs"])
    use(monkeypatch, target, tmp_path / "target")
    assert cli.main(["events", "import", str(log), "--expect", chain]) == 0
    assert capsys.readouterr().out.strip().endswith(f": {chain}")
    assert outputs(capsys) == original
    assert cli.main(["audit", "verify", "--expect", chain]) == 0
    assert "verified:" in capsys.readouterr().out
    # the imported store goes on: a new event is numbered after the imported ones
    assert cli.main(["stores", "add", "Gamma", "https://gamma.example", "--platform",
                     "shopify"]) == 0
    with backends.open_ledger(target, tmp_path / "target") as ledger:
        envelopes = ledger.source.read(0, 100_000)
    last = json.loads(log.read_text().splitlines()[-1])["position"]
    assert envelopes[-1].position == last + 1 and envelopes[-1].event_type == "Store.Registered"


def _edit_consistently(lines: Lines) -> Lines:
    """Payload and state changed together: only the chain shows it."""
    return [line.replace("Product 2", "Product X") for line in lines]


def _bad_json(lines: Lines) -> Lines:
    return lines[:3] + [lines[3][:-10]] + lines[4:]


def _unknown_type(lines: Lines) -> Lines:
    line = json.loads(lines[2])
    line["topic"] = line["topic"].rsplit(".", 1)[0] + ".Teleported"
    line["event_type"] = line["event_type"].rsplit(".", 1)[0] + ".Teleported"
    return lines[:2] + [json.dumps(line)] + lines[3:]


def _not_ours(lines: Lines) -> Lines:
    line = json.loads(lines[2])
    line["topic"] = "antigravity:fly"
    return lines[:2] + [json.dumps(line)] + lines[3:]


def _old_export(lines: Lines) -> Lines:
    return [json.dumps({k: v for k, v in json.loads(line).items()
                        if k not in ("topic", "state", "previous", "chain")}) for line in lines]


@pytest.mark.parametrize("damage, message", [
    (_drop, "a gap"),
    (_swap, "a gap"),  # the first swapped line is seen first: a later one comes before it
    (lambda lines: lines[:5] + [lines[7], lines[6], lines[5]] + lines[8:], "a gap"),
    (lambda lines: lines[:6] + [lines[4]] + lines[6:], "reordered or repeated"),
    (_edit_payload, "was edited: its envelope is not what its stored state says"),
    (_edit_consistently, "was edited: the audit chain breaks here"),
    (_bad_json, ":4: not valid JSON"),
    (_unknown_type, "unknown event type"),
    (_not_ours, "unknown event type 'antigravity:fly'"),
    (_old_export, "export again"),
    (lambda lines: lines[3:], "a gap"),
    (lambda lines: [], "holds no events"),
], ids=["gap", "swap", "reorder3", "repeat", "edit", "edit-chain", "json", "type", "topic",
        "old-export", "no-start", "empty"])
def test_a_damaged_file_is_refused_and_nothing_is_written(
        exported: tuple[Path, str], target: str, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        damage: Callable[[Lines], Lines], message: str) -> None:
    log, _ = exported
    damaged = tmp_path / "damaged.jsonl"
    damaged.write_text("".join(line + "\n" for line in damage(log.read_text().splitlines())))
    use(monkeypatch, target, tmp_path / "target")
    assert cli.main(["events", "import", str(damaged)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("crawl-ledger: error: nothing imported: ") and err.count("\n") == 1
    assert message in err
    with backends.open_ledger(target, tmp_path / "target") as ledger:
        assert ledger.source.head() == 0


def test_a_non_empty_store_is_refused(exported: tuple[Path, str], store_url: str,
                                      tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log, _ = exported
    with backends.open_ledger(store_url, tmp_path / "source") as ledger:
        head = ledger.source.head()
    assert cli.main(["events", "import", str(log)]) == 2  # into the source itself
    assert "is not empty" in capsys.readouterr().err
    with backends.open_ledger(store_url, tmp_path / "source") as ledger:
        assert ledger.source.head() == head


def test_a_file_that_does_not_end_in_the_expected_hash_is_refused(
        exported: tuple[Path, str], target: str, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    log, chain = exported
    use(monkeypatch, target, tmp_path / "target")
    wrong = ("0" if chain[0] != "0" else "1") + chain[1:]
    assert cli.main(["events", "import", str(log), "--expect", wrong]) == 2
    assert "not the expected" in capsys.readouterr().err
    with backends.open_ledger(target, tmp_path / "target") as ledger:
        assert ledger.source.head() == 0


def test_a_failure_while_inserting_rolls_the_whole_import_back(
        exported: tuple[Path, str], target: str, tmp_path: Path) -> None:
    """All or nothing: rows already inserted go when a later batch fails."""
    from domain.errors import InvalidInput
    from runtime.admin.export_file import FileSummary, read_rows

    log, _ = exported
    with backends.open_ledger(target, tmp_path / "target") as ledger:
        rows = list(read_rows(log, ledger.app.mapper.to_domain_event, FileSummary()))

        def batches() -> Iterator[list[Any]]:
            yield rows[:100]
            raise InvalidInput("the file changed")

        with pytest.raises(InvalidInput):
            ledger.backend.import_rows(ledger.app.recorder, batches())
        assert ledger.source.head() == 0
        assert ledger.backend.import_rows(ledger.app.recorder, [rows[:50], rows[50:]]) == len(rows)
        assert ledger.source.head() == rows[-1][0]
