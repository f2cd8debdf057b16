"""`crawl-ledger raw get|verify|reindex` over the pages a real `crawl-ledger run`
archived: an auditor reads a crawl's page back by the `raw_ref` its event carries,
checks the whole archive, and gets one clear line for a bad ref or a damaged pack."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

from conftest import PAGES


def test_an_auditor_reads_back_and_verifies_what_a_run_archived(
        shop: str, tmp_path: Path, crawl_ledger_bin: str,
        cli_env: Callable[..., dict[str, str]]) -> None:
    env = cli_env(tmp_path / "data", LEDGER_ALLOW_NETWORKS="127.0.0.1/32")

    def cli(*argv: str, check: bool = True) -> subprocess.CompletedProcess[bytes]:
        result = subprocess.run([crawl_ledger_bin, *argv], env=env, capture_output=True,
                                timeout=120)
        assert not check or result.returncode == 0, result.stderr
        return result

    for action in (["get", "sha256:" + "0" * 64], ["verify"], ["reindex"]):
        nothing = cli("raw", *action, check=False)  # no crawl yet: no archive to read or make
        assert nothing.returncode == 2 and nothing.stderr.decode().startswith(
            "crawl-ledger: error: no archive of pages at "), nothing.stderr
    assert not (tmp_path / "data" / "raw").exists()

    store = json.loads(cli("stores", "add", "Shop", shop, "--platform", "generic",
                           "--json").stdout)
    for path in ("/lamp", "/chair"):
        cli("jobs", "schedule", store["id"], "--kind", "product_page", "--url", shop + path,
            "--once")
    cli("run", "--until-idle")
    events = [json.loads(line) for line in cli("events", "tail", "--json").stdout.splitlines()]
    refs: dict[str, Any] = {e["payload"]["outcome"]["final_url"]: e["payload"]["outcome"]["raw_ref"]
                            for e in events if e["event_type"] == "CrawlJob.Succeeded"}
    assert sorted(refs) == [shop + "/chair", shop + "/lamp"]

    for url, ref in refs.items():  # the bytes the shop served, by the event's reference
        assert cli("raw", "get", ref).stdout == PAGES[url.removeprefix(shop)].encode()
    out = tmp_path / "lamp.html"
    cli("raw", "get", refs[shop + "/lamp"], "--out", str(out))
    assert out.read_bytes() == PAGES["/lamp"].encode()

    verified = json.loads(cli("raw", "verify", "--json").stdout)
    assert verified["intact"] and verified["records"] == 2 and verified["problems"] == []

    missing = cli("raw", "get", "sha256:" + "0" * 64, check=False)
    assert missing.returncode == 2 and missing.stdout == b""
    assert missing.stderr.decode().splitlines() == [
        f"crawl-ledger: error: sha256:{'0' * 64}: not in the archive"]
    malformed = cli("raw", "get", "../../etc/passwd", check=False)
    assert malformed.returncode == 2 and b"malformed raw ref" in malformed.stderr

    [pack] = (tmp_path / "data" / "raw" / "packs").glob("*.pack")
    data = bytearray(pack.read_bytes())
    data[-12:-8] = bytes(4 - b for b in range(4))  # inside the last record's member
    pack.write_bytes(bytes(data))
    damaged = cli("raw", "verify", check=False)
    assert damaged.returncode == 1
    lines = damaged.stdout.decode().splitlines()
    assert any(line.startswith(f"pack {pack.name}: bytes ") for line in lines), lines
    assert any(line.startswith("index: sha256:") for line in lines), lines
    assert lines[-1].endswith("problem(s)")

    (tmp_path / "data" / "raw" / "index.sqlite").unlink()
    for suffix in ("-wal", "-shm"):
        (tmp_path / "data" / "raw" / f"index.sqlite{suffix}").unlink(missing_ok=True)
    assert cli("raw", "reindex").stdout.decode().strip() == "1 record(s) indexed again"
    intact, torn = sorted(refs.items(), key=lambda item: data.find(bytes.fromhex(item[1][7:])))
    assert cli("raw", "get", intact[1]).stdout == PAGES[intact[0].removeprefix(shop)].encode()
    gone = cli("raw", "get", torn[1], check=False)
    assert gone.returncode == 2 and gone.stderr.endswith(b": not in the archive\n")
