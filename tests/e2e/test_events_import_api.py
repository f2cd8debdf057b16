"""`POST /api/v1/events/import` over real HTTP on loopback, on both backends.

A seeded ledger is exported with `crawl-ledger events export`; the file is uploaded to
a second server over an empty store: its read models, read back over HTTP, equal the
original server's. A gap, a reorder, an edited line, a wrong `expect`, an upload over
the size cap, a too small scope and a store that holds events are refused with a
one-line RFC 9457 problem, and nothing is written.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import backends
import httpx
import pytest
from export_damage import Lines, drop, edit_payload, swap
from seeded_history import record_seeded_history
from test_api import bearer, serving

from ledger import cli
from ledger.bootstrap import Ledger


@pytest.fixture
def exported(store_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
             capsys: pytest.CaptureFixture[str]) -> tuple[Path, str]:
    """A seeded ledger on the backend, exported; (file, audit chain hash)."""
    with backends.open_ledger(store_url, tmp_path / "source") as ledger:
        record_seeded_history(ledger, cycles=8, seed=4)
    monkeypatch.setenv("LEDGER_STORE", store_url)
    monkeypatch.setenv("LEDGER_DATA_DIR", str(tmp_path / "source" / "data"))
    log = tmp_path / "log.jsonl"
    assert cli.main(["events", "export", "-o", str(log)]) == 0
    chain = capsys.readouterr().err.split("audit chain hash at position")[1].split(": ")[1]
    return log, chain.strip()


@pytest.fixture
def target(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Ledger]:
    """A second, empty store on the same backend as `store_url`."""
    backend = "postgres" if request.node.callspec.params["store_url"] == "postgres" else "sqlite"
    with backends.store_url(backend, tmp_path / "target") as url, \
            backends.open_ledger(url, tmp_path / "target") as ledger:
        yield ledger


def read_models(url: str, secret: str) -> dict[str, Any]:
    with httpx.Client(base_url=url, headers=bearer(secret), timeout=30) as http:
        return {path: http.get(f"/api/v1/{path}", params={"limit": 500}).json()
                for path in ("stores", "jobs", "products")}


def upload(url: str, secret: str, body: bytes | Iterator[bytes], **params: str) -> httpx.Response:
    return httpx.post(f"{url}/api/v1/events/import", content=body, params=params,
                      headers={**bearer(secret), "content-type": "application/x-ndjson"},
                      timeout=60)


def assert_refused(answer: httpx.Response, status: int, *words: str) -> None:
    assert answer.status_code == status, answer.text
    assert answer.headers["content-type"] == "application/problem+json"
    detail = answer.json()["detail"]
    assert "\n" not in detail and all(w in detail for w in words), detail


def nothing_written(ledger: Ledger) -> None:
    assert ledger.source.head() == 0 and ledger.projection_position() == 0
    assert not list((ledger.data_dir / "imports").glob("*"))  # no upload left behind


def test_an_uploaded_export_gives_the_original_read_models(
        exported: tuple[Path, str], store_url: str, target: Ledger, tmp_path: Path) -> None:
    log, chain = exported
    with backends.open_ledger(store_url, tmp_path / "source") as source:
        source.catch_up()  # as `serve` does when it opens the ledger
        with serving(source) as (url, secrets):
            original = read_models(url, secrets["read"])
    assert original["products"]["items"] and original["jobs"]["items"]
    with serving(target) as (url, secrets):
        answer = upload(url, secrets["admin"], log.read_bytes(), expect=chain)
        assert answer.status_code == 200, answer.text
        last = json.loads(log.read_text().splitlines()[-1])["position"]
        assert answer.json()["chain_hash"] == chain and answer.json()["position"] == last
        assert read_models(url, secrets["read"]) == original
        again = upload(url, secrets["admin"], log.read_bytes())
        assert_refused(again, 409, "is not empty")
    assert target.source.head() == last


@pytest.mark.parametrize(("damage", "words"), [
    (drop, ("upload:6:", "a gap")),
    (swap, ("upload:6:",)),
    (edit_payload, ("was edited",)),
])
def test_a_damaged_upload_is_refused_and_writes_nothing(
        exported: tuple[Path, str], target: Ledger,
        damage: Callable[[Lines], Lines], words: tuple[str, ...]) -> None:
    log, _ = exported
    body = "".join(damage(log.read_text().splitlines(keepends=True))).encode()
    with serving(target) as (url, secrets):
        assert_refused(upload(url, secrets["admin"], body), 422, *words)
    nothing_written(target)


def test_who_may_import_and_how_much(exported: tuple[Path, str], target: Ledger) -> None:
    log, chain = exported
    body = log.read_bytes()
    with serving(target, import_max_bytes=len(body) - 1) as (url, secrets):
        for scope in ("read", "operate", "bot"):
            assert_refused(upload(url, secrets[scope], body), 403, "needs admin")
        assert_refused(upload(url, "cl_forged", body), 401)
        assert_refused(upload(url, secrets["admin"], body), 413, f"larger than {len(body) - 1}")
        chunked = iter([body[:len(body) // 2], body[len(body) // 2:]])  # no Content-Length
        assert_refused(upload(url, secrets["admin"], chunked), 413, "nothing imported")
        head = body[:len(body) // 2].rsplit(b"\n", 1)[0] + b"\n"  # whole lines, under the cap
        assert_refused(upload(url, secrets["admin"], head, expect="0" * 64), 422,
                       "upload: its audit chain ends in", "not the expected " + "0" * 64)
        assert chain not in head.decode()  # the full log's hash is not this file's
    nothing_written(target)
