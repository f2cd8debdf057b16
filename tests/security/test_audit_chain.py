"""The audit chain covers every stored byte (issue 43, rows 8-9), on both backends.

An edit made directly in `stored_events` (topic, state, version, originator id), with no
checkpoint ever taken, is reported by `audit verify` at its position, and verify deletes
nothing (row counts before and after). A snapshot edited at an old version is reported,
and only `audit repair` drops it. An export whose stored states were edited (a Decimal
or a datetime turned into a string, the originator topic swapped: the envelopes stay
the same) is refused by `events import --expect` on the command line and over HTTP,
even when the forger recomputes the file's chain, and nothing is imported.
"""

from __future__ import annotations

import contextlib
import json
import re
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from uuid import UUID

import backends
import httpx
import pytest
from api_server import api_server
from seeded_history import record_prices

from api.app import create_app
from api.auth import TokenStore
from ledger import cli
from ledger.bootstrap import Ledger
from runtime.clock import SystemClock

T0 = datetime(2026, 3, 1, tzinfo=UTC)


def store_with_snapshots(ledger: Ledger) -> tuple[UUID, list[int]]:
    """A store whose policy changed 45 times: snapshots at two versions at least."""
    app = ledger.app
    store: UUID = app.register_store(name="S", base_url="https://s.example", platform="generic",
                                     now=T0)
    for i in range(45):
        app.change_store_policy(store, crawl_delay=float(i % 7 + 1), now=T0 + timedelta(minutes=i))
    versions = sorted(s.originator_version for s in snapshot_recorder(ledger).select_events(store))
    assert len(versions) >= 2, versions
    return store, versions


def snapshot_recorder(ledger: Ledger) -> Any:
    assert ledger.app.snapshots is not None
    return ledger.app.snapshots.recorder


def position_of(ledger: Ledger, topic: str, contains: bytes = b"") -> int:
    rows = ledger.backend.notification_rows(ledger.app.recorder, 0, 10_000)
    return next(r[0] for r in rows if r[3] == topic and contains in bytes(r[4]))


def stored(ledger: Ledger, position: int) -> tuple[Any, ...]:
    """(position, originator id as text, version, topic, state) as stored."""
    (row,) = ledger.backend.notification_rows(ledger.app.recorder, position - 1, 1)
    return tuple(row)


def execute(ledger: Ledger, recorder: Any, sql: str, params: tuple[Any, ...]) -> list[Any]:
    """Run `sql` ({table}, {key}; `?` marks) on `recorder`'s table behind the ledger's back."""
    if ledger.backend.name == "postgresql":
        table = f'"{recorder.datastore.schema}".{recorder.events_table_name}'
        with recorder.datastore.get_connection() as conn:
            cursor = conn.execute(sql.format(table=table, key="notification_id").replace("?", "%s"),
                                  params)
            rows = list(cursor.fetchall()) if cursor.description else []
            conn.commit()
            return rows
    with recorder.datastore.transaction(commit=True) as cursor:
        cursor.execute(sql.format(table=recorder.events_table_name, key="rowid"), params)
        return list(cursor.fetchall())


def scalar(ledger: Ledger, recorder: Any, sql: str) -> int:
    (row,) = execute(ledger, recorder, sql, ())
    return int(row["n"] if isinstance(row, dict) else row[0])


def count_rows(ledger: Ledger) -> dict[str, int]:
    """Rows of every table the audit reads: events, their links, snapshots."""
    events, snapshots = ledger.app.recorder, snapshot_recorder(ledger)
    found = {name: scalar(ledger, recorder, "SELECT count(*) AS n FROM {table}")
             for name, recorder in (("events", events), ("snapshots", snapshots))}
    if ledger.backend.name == "postgresql":
        has_links = scalar(ledger, events, "SELECT count(*) AS n FROM information_schema.columns "
                           f"WHERE column_name = 'link' AND table_schema = "
                           f"'{events.datastore.schema}'")
    else:
        has_links = scalar(ledger, events, "SELECT count(*) FROM pragma_table_info('{table}') "
                           "WHERE name = 'link'")
    found["links"] = has_links and scalar(ledger, events, "SELECT count(link) AS n FROM {table}")
    return found


def run_cli(monkeypatch: pytest.MonkeyPatch, url: str, data: Path, *args: str) -> int:
    monkeypatch.setenv("LEDGER_STORE", url)
    monkeypatch.setenv("LEDGER_DATA_DIR", str(data))
    return cli.main(list(args))


# --- edits in the database ------------------------------------------------------------

def _one_byte_state(state: bytes) -> bytes:
    return state.replace(b'"19.99"', b'"19.98"', 1)


def _decimal_as_string(state: bytes) -> bytes:
    return state.replace(b'{"_type_":"decimal_str","_data_":"19.99"}', b'"19.99"', 1)


def _datetime_as_string(state: bytes) -> bytes:
    # the very text the envelope shows, so the envelope stays the same
    return re.sub(rb'"observed_at":\{"_type_":"datetime_iso","_data_":"([^"+]+)\+00:00"\}',
                  rb'"observed_at":"\1.000000Z"', state, count=1)


def _flip_hex(text: str) -> str:
    return ("1" if text[0] != "1" else "2") + text[1:]


DB_EDITS: dict[str, Callable[[tuple[Any, ...]], tuple[str, Any]]] = {
    "state, one byte": lambda row: ("state", _one_byte_state(bytes(row[4]))),
    "state, a Decimal as a string": lambda row: ("state", _decimal_as_string(bytes(row[4]))),
    "state, a datetime as a string": lambda row: ("state", _datetime_as_string(bytes(row[4]))),
    "topic, one byte": lambda row: ("topic", row[3][:-1] + "X"),
    "version": lambda row: ("originator_version", row[2] + 1000),
    "originator id, one hex digit": lambda row: ("originator_id", _flip_hex(row[1])),
}


@pytest.mark.parametrize("edit", list(DB_EDITS))
def test_verify_reports_an_edit_in_stored_events_without_any_checkpoint(
        store_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str], edit: str) -> None:
    with backends.open_ledger(store_url, tmp_path) as ledger:
        record_prices(ledger, ["19.99", "19.99", "24.50"])
        victim = position_of(ledger, "domain.product:Product.Observed", b'"19.99"')
        column, value = DB_EDITS[edit](stored(ledger, victim))
        assert value != stored(ledger, victim)[("originator_id", "originator_version", "topic",
                                                 "state").index(column) + 1]
        if column == "originator_id" and ledger.backend.name == "postgresql":
            value = UUID(value)
        elif column == "state":
            value = bytes(value)
        execute(ledger, ledger.app.recorder, f"UPDATE {{table}} SET {column} = ? WHERE {{key}} = ?",
                (value, victim))
        before = count_rows(ledger)
    data = tmp_path / "data"
    assert run_cli(monkeypatch, store_url, data, "audit", "verify") == 1
    out = capsys.readouterr().out
    assert out.startswith(f"TAMPERED: the event at position {victim} does not match its chain "
                          "link"), out
    with backends.open_ledger(store_url, tmp_path) as ledger:
        assert count_rows(ledger) == before  # verify deleted nothing


def test_verify_reports_a_deleted_event_and_deletes_nothing(
        store_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    with backends.open_ledger(store_url, tmp_path) as ledger:
        record_prices(ledger, ["19.99", "24.50"])
        victim = position_of(ledger, "domain.product:Product.Observed")
        execute(ledger, ledger.app.recorder, "DELETE FROM {table} WHERE {key} = ?", (victim,))
        before = count_rows(ledger)
    assert run_cli(monkeypatch, store_url, tmp_path / "data", "audit", "verify") == 1
    out = capsys.readouterr().out
    assert out.startswith("TAMPERED: the event at position"), out
    assert f"position {victim}" in out or f"position {victim + 1}" in out, out
    with backends.open_ledger(store_url, tmp_path) as ledger:
        assert count_rows(ledger) == before


# --- snapshots ------------------------------------------------------------------------

def edit_snapshot(ledger: Ledger, store: UUID, version: int, delay: float) -> None:
    recorder = snapshot_recorder(ledger)
    (old,) = [s for s in recorder.select_events(store) if s.originator_version == version]
    data = json.loads(old.state)
    data["state"]["policy"]["crawl_delay"] = delay
    ident = store if ledger.backend.name == "postgresql" else store.hex
    execute(ledger, recorder, "UPDATE {table} SET state = ? WHERE originator_id = ? AND "
            "originator_version = ?", (json.dumps(data).encode(), ident, version))


def test_a_snapshot_edited_at_an_old_version_is_reported_and_only_repair_drops_it(
        store_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    with backends.open_ledger(store_url, tmp_path) as ledger:
        store, versions = store_with_snapshots(ledger)
        edit_snapshot(ledger, store, versions[0], 999.0)  # not the latest snapshot
        before = count_rows(ledger)
    data = tmp_path / "data"
    for _ in range(2):  # verify reports, and the second finds the same: nothing deleted
        assert run_cli(monkeypatch, store_url, data, "audit", "verify") == 1
        out = capsys.readouterr().out
        assert out.startswith("verified:"), out
        assert f"snapshot of {store} at version {versions[0]}: differs from its events in " \
               "policy" in out, out
        assert f"at version {versions[1]}" not in out  # the honest one passes
        with backends.open_ledger(store_url, tmp_path) as ledger:
            assert count_rows(ledger) == before
    assert run_cli(monkeypatch, store_url, data, "audit", "repair") == 0
    assert f"repaired: snapshot of {store} at version {versions[0]}" in capsys.readouterr().out
    assert run_cli(monkeypatch, store_url, data, "audit", "verify") == 0
    with backends.open_ledger(store_url, tmp_path) as ledger:
        assert ledger.app.repository.get(store).policy.crawl_delay != 999.0


def test_edited_events_under_a_snapshot_are_reported_and_the_snapshot_kept(
        store_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """Row 9: the events were edited, not the snapshot; verify must not blame (and delete)
    the snapshot, and repair refuses to touch derived data of a log that does not verify."""
    with backends.open_ledger(store_url, tmp_path) as ledger:
        store, versions = store_with_snapshots(ledger)
        victim = position_of(ledger, "domain.store:Store.PolicyChanged", b'"crawl_delay":3.0')
        assert stored(ledger, victim)[2] < versions[-1]
        row = stored(ledger, victim)
        execute(ledger, ledger.app.recorder, "UPDATE {table} SET state = ? WHERE {key} = ?",
                (bytes(row[4]).replace(b'"crawl_delay":3.0', b'"crawl_delay":9.0'), victim))
        before = count_rows(ledger)
    data = tmp_path / "data"
    assert run_cli(monkeypatch, store_url, data, "audit", "verify") == 1
    out = capsys.readouterr().out
    assert out.startswith(f"TAMPERED: the event at position {victim}"), out
    assert "snapshot" not in out.split("\n")[0]
    assert run_cli(monkeypatch, store_url, data, "audit", "repair") == 2
    assert "nothing repaired" in capsys.readouterr().err
    with backends.open_ledger(store_url, tmp_path) as ledger:
        assert count_rows(ledger) == before


# --- exports --------------------------------------------------------------------------

def _swap_topic(state: str) -> str:
    return state.replace('"originator_topic":"domain.product:Product"',
                         '"originator_topic":"domain.store:Store"', 1)


EXPORT_EDITS: dict[str, tuple[str, Callable[[str], str]]] = {
    # (the event type of the line to edit, the edit of its stored state)
    "a Decimal as a string": ("Product.Observed",
                              lambda s: _decimal_as_string(s.encode()).decode()),
    "a datetime as a string": ("Product.Observed",
                               lambda s: _datetime_as_string(s.encode()).decode()),
    "originator_topic swapped": ("Product.Discovered", _swap_topic),
}


def export(store_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
           capsys: pytest.CaptureFixture[str]) -> tuple[list[dict[str, Any]], str]:
    with backends.open_ledger(store_url, tmp_path / "source") as ledger:
        record_prices(ledger, ["19.99", "19.99", "24.50"])
    log = tmp_path / "log.jsonl"
    assert run_cli(monkeypatch, store_url, tmp_path / "source" / "data",
                   "events", "export", "-o", str(log)) == 0
    head = capsys.readouterr().err.split("audit chain hash at position")[1].split(": ")[1].strip()
    return [json.loads(line) for line in log.read_text().splitlines()], head


def forge(lines: list[dict[str, Any]], edit: str, rechain: bool) -> str:
    """The export with one stored state edited (its envelope unchanged) and, with
    `rechain`, every line's chain recomputed as a careful forger would."""
    event_type, change = EXPORT_EDITS[edit]
    edited = [dict(line) for line in lines]
    target = next(line for line in edited if line["event_type"] == event_type)
    target["state"] = change(target["state"])
    assert target["state"] != next(ln for ln in lines if ln["position"] == target["position"])["state"]
    if rechain:
        from eventstore.chain import GENESIS, next_link
        from runtime.admin.export_file import chain_record

        chain = GENESIS
        for line in edited:
            chain = next_link(chain, *chain_record(line))
            line["chain"] = chain.hex()
    return "".join(json.dumps(line, separators=(",", ":")) + "\n" for line in edited)


@pytest.mark.parametrize("edit", list(EXPORT_EDITS))
def test_an_edited_export_is_refused_by_import_expect(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        edit: str) -> None:
    with backends.store_url("sqlite", tmp_path / "a") as source_url, \
            backends.store_url("sqlite", tmp_path / "b") as target_url:
        lines, head = export(source_url, tmp_path, monkeypatch, capsys)
        for rechain in (False, True):
            forged = tmp_path / f"forged-{rechain}.jsonl"
            forged.write_text(forge(lines, edit, rechain))
            assert run_cli(monkeypatch, target_url, tmp_path / "target",
                           "events", "import", str(forged), "--expect", head) == 2
            err = capsys.readouterr().err
            assert "nothing imported" in err, err
            assert ("not the expected" if rechain else "the audit chain breaks here") in err, err
            with backends.open_ledger(target_url, tmp_path / "target") as target:
                assert target.source.head() == 0


@contextmanager
def serving(ledger: Ledger) -> Iterator[tuple[str, str]]:
    """The API on a free loopback port; (its URL, an admin token)."""
    secret = TokenStore(ledger.tables.tokens).create("admin", "admin", T0)[0]
    with api_server(create_app(ledger, TokenStore(ledger.tables.tokens), SystemClock())) as url:
        yield url, secret


@pytest.mark.parametrize("edit", list(EXPORT_EDITS))
def test_an_edited_upload_is_refused_by_the_api_expect(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        edit: str) -> None:
    with backends.store_url("sqlite", tmp_path / "a") as source_url, \
            backends.store_url("sqlite", tmp_path / "b") as target_url:
        lines, head = export(source_url, tmp_path, monkeypatch, capsys)
        with backends.open_ledger(target_url, tmp_path / "target") as target, \
                serving(target) as (url, secret):

            def upload(body: str) -> httpx.Response:
                return httpx.post(f"{url}/api/v1/events/import", params={"expect": head},
                                  content=body.encode(), timeout=60,
                                  headers={"Authorization": f"Bearer {secret}",
                                           "content-type": "application/x-ndjson"})

            for rechain in (False, True):
                answer = upload(forge(lines, edit, rechain))
                assert answer.status_code == 422, answer.text
                assert ("not the expected" if rechain else "the audit chain breaks here") \
                    in answer.json()["detail"]
                assert target.source.head() == 0
            answer = upload("".join(json.dumps(line, separators=(",", ":")) + "\n"
                                    for line in lines))
            assert answer.status_code == 200, answer.text
            assert answer.json()["chain_hash"] == head


# --- upgrade and concurrency ----------------------------------------------------------

def drop_links(ledger: Ledger) -> None:
    execute(ledger, ledger.app.recorder, "ALTER TABLE {table} DROP COLUMN link", ())


def test_a_store_written_before_links_is_chained_once_on_upgrade(
        store_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    with backends.open_ledger(store_url, tmp_path) as ledger:
        record_prices(ledger, ["19.99", "24.50"])
        drop_links(ledger)  # as a store written by a version without links
        events = ledger.source.head()
    with backends.open_ledger(store_url, tmp_path) as ledger:  # the upgrade
        assert count_rows(ledger)["links"] == events
        ledger.app.register_store(name="Other", base_url="https://other.example",
                                  platform="generic", now=T0)  # chains on from the backfill
    assert run_cli(monkeypatch, store_url, tmp_path / "data", "audit", "verify") == 0
    assert "verified:" in capsys.readouterr().out


@pytest.mark.postgres
def test_concurrent_writers_chain_in_notification_id_order(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """Three ledgers (three connection pools) saving at once on one PostgreSQL store: the
    table lock orders their ids and links alike."""
    with backends.store_url("postgres", tmp_path) as store_url:
        concurrent_saves(store_url, tmp_path)
        with backends.open_ledger(store_url, tmp_path) as ledger:
            found = count_rows(ledger)
            assert (found["events"], found["links"]) == (120, 120)
        assert run_cli(monkeypatch, store_url, tmp_path / "data", "audit", "verify") == 0
        assert "verified: 120 events" in capsys.readouterr().out


def concurrent_saves(store_url: str, tmp_path: Path) -> None:
    errors: list[BaseException] = []

    def write(ledger: Ledger, name: str) -> None:
        try:
            for i in range(40):
                ledger.app.register_store(name=f"{name}{i}", base_url=f"https://{name}{i}.example",
                                          platform="generic", now=T0)
        except BaseException as error:  # noqa: BLE001 - reported by the assertion below
            errors.append(error)

    names = ("a", "b", "c")
    with contextlib.ExitStack() as stack:  # opened one after the other, then racing
        ledgers = [stack.enter_context(backends.open_ledger(store_url, tmp_path / n)) for n in names]
        threads = [threading.Thread(target=write, args=pair) for pair in zip(ledgers, names)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(120)
    assert errors == []
