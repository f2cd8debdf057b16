"""Where the corpus tests find the corpus's bytes, and when they skip or fail without them."""

from __future__ import annotations

import gzip
from pathlib import Path
from typing import Any

import corpus_files as cf
import pytest


def entries(count: int) -> list[dict[str, Any]]:
    # names no real corpus root holds, so only the test's own folder decides presence
    return [{"id": f"t{n}", "file": f"pages/unit-test-only-{n}.html.gz"} for n in range(count)]


def store(root: Path, entry: dict[str, Any], html: bytes = b"<p>1</p>") -> None:
    path = root / entry["file"]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(gzip.compress(html))


def test_the_configured_folder_replaces_the_shared_one_and_the_cache_follows(tmp_path: Path) -> None:
    assert cf.roots({}) == (cf.SHARED, cf.CACHE)
    assert cf.roots({"LEDGER_CORPUS_DIR": str(tmp_path)}) == (tmp_path, cf.CACHE)


def test_bytes_are_read_from_the_configured_folder_and_decompressed(tmp_path: Path) -> None:
    entry = entries(1)[0]
    store(tmp_path, entry, b"<p>price 3</p>")
    env = {"LEDGER_CORPUS_DIR": str(tmp_path)}
    assert cf.content(entry["file"], env) == b"<p>price 3</p>"
    assert cf.raw(entry["file"], env).startswith(b"\x1f\x8b")


def test_missing_bytes_raise_one_clear_error(tmp_path: Path) -> None:
    with pytest.raises(cf.CorpusBytesMissing, match="no bytes for pages/unit-test-only-0"):
        cf.content(entries(1)[0]["file"], {"LEDGER_CORPUS_DIR": str(tmp_path)})


def test_dispensary_entries_live_below_their_folder() -> None:
    assert cf.relative({"file": "jane_1.json.gz"}, "dispensary/manifest.json") == "dispensary/jane_1.json.gz"
    assert cf.relative({"file": "pages/a.html.gz"}) == "pages/a.html.gz"


def test_presence_counts_the_entries_without_bytes(tmp_path: Path) -> None:
    listed = entries(4)
    store(tmp_path, listed[0])
    found = cf.presence(listed, environ={"LEDGER_CORPUS_DIR": str(tmp_path)})
    assert [e["id"] for e in found.present] == ["t0"] and len(found.missing) == 3
    assert found.line() == "corpus bytes: 1 of 4 entries present, 3 without bytes"


def test_without_any_bytes_the_tests_skip_outside_ci(tmp_path: Path) -> None:
    env = {"LEDGER_CORPUS_DIR": str(tmp_path / "absent")}
    why = cf.verdict(cf.presence(entries(3), environ=env), env)
    assert why is not None and why.startswith("skip: no corpus bytes here")


def test_under_ci_fewer_than_95_percent_present_fails(tmp_path: Path) -> None:
    listed = entries(20)
    for entry in listed[:18]:
        store(tmp_path, entry)
    env = {"LEDGER_CORPUS_DIR": str(tmp_path), "CI": "true"}
    assert cf.verdict(cf.presence(listed, environ=env), env) == (
        "fail: corpus bytes: 18 of 20 entries present, 2 without bytes "
        "(CI needs 95% of the entries without a first sight; see tests/corpus/README.md)")
    store(tmp_path, listed[18])
    assert cf.verdict(cf.presence(listed, environ=env), env) is None
    assert cf.verdict(cf.presence(listed, environ={**env, "CI": ""}), {**env, "CI": ""}) is None


def test_under_ci_no_bytes_at_all_fails_rather_than_skips(tmp_path: Path) -> None:
    env = {"LEDGER_CORPUS_DIR": str(tmp_path), "CI": "true"}
    why = cf.verdict(cf.presence(entries(2), environ=env), env)
    assert why is not None and why.startswith("fail: corpus bytes: 0 of 2")


def test_under_ci_entries_with_a_first_sight_may_lack_bytes(tmp_path: Path) -> None:
    """A clean checkout in CI: the shared folder holds the tuned entries, not those added since."""
    tuned, added = entries(19), [{**entry, "first_sight": {"commit": "0" * 40}} for entry in entries(21)[19:]]
    for entry in tuned:
        store(tmp_path, entry)
    env = {"LEDGER_CORPUS_DIR": str(tmp_path), "CI": "true"}
    found = cf.presence(tuned + added, environ=env)
    assert found.line() == ("corpus bytes: 19 of 21 entries present, 2 without bytes "
                            "(2 of them added since, with a first sight)")
    assert cf.verdict(found, env) is None
    store(tmp_path, added[0])
    assert [e["id"] for e in cf.presence(tuned + added, environ=env).present][-1] == "t19"


def test_under_ci_missing_tuned_entries_still_fail_beside_added_ones(tmp_path: Path) -> None:
    listed = entries(20) + [{**entry, "first_sight": {"commit": "0" * 40}} for entry in entries(40)[20:]]
    for entry in listed[1:]:
        store(tmp_path, entry)
    env = {"LEDGER_CORPUS_DIR": str(tmp_path), "CI": "true"}
    assert cf.verdict(cf.presence(listed, environ=env), env) is None  # 19 of 20 tuned: 95 %
    (tmp_path / listed[1]["file"]).unlink()
    why = cf.verdict(cf.presence(listed, environ=env), env)
    assert why is not None and why.startswith("fail: corpus bytes: 38 of 40 entries present")


def test_entries_pending_their_first_sight_count_like_added_ones_but_are_never_scored(tmp_path: Path) -> None:
    """An entry committed with `"first_sight": "pending"` waits for bench/corpus_first_sight.py:
    CI does not expect its bytes in the shared folder, and no test is handed it to score."""
    tuned = entries(19)
    waiting = [{**entry, "first_sight": cf.PENDING} for entry in entries(22)[19:]]
    for entry in tuned + waiting[:1]:
        store(tmp_path, entry)
    env = {"LEDGER_CORPUS_DIR": str(tmp_path), "CI": "true"}
    found = cf.presence(tuned + waiting, environ=env)
    assert cf.verdict(found, env) is None
    assert [e["id"] for e in found.present][-1] == "t19"
    assert [e["id"] for e in found.scorable] == [e["id"] for e in tuned]
    assert found.line() == ("corpus bytes: 20 of 22 entries present, 2 without bytes "
                            "(2 of them added since, with a first sight); "
                            "1 present pending their first sight, not scored")
    assert [cf.pending(e) for e in (tuned[0], waiting[0])] == [False, True]
    assert not cf.has_first_sight(waiting[0])
    assert cf.has_first_sight({**tuned[0], "first_sight": {"commit": "0" * 40, "price": True}})


def test_the_first_sight_script_scores_pending_and_uncommitted_entries_only() -> None:
    recorded = {"commit": "0" * 40, "price": False}
    listed: list[dict[str, Any]] = [{"id": "tuned"}, {"id": "recorded", "first_sight": recorded},
                                    {"id": "waiting", "first_sight": cf.PENDING}, {"id": "new"}]
    chosen = cf.awaiting_first_sight(listed, committed={"tuned", "recorded", "waiting"})
    assert [e["id"] for e in chosen] == ["waiting", "new"]
    assert cf.awaiting_first_sight(listed, committed={"tuned", "recorded", "waiting", "new"}) == [listed[2]]
