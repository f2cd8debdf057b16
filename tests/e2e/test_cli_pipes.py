"""`crawl-ledger … | head`: when the reader of its output goes away, a command stops
quietly as a Unix tool does (exit 141, as after SIGPIPE), with no traceback."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from backends import LOOPBACK_ENV

from ledger.bootstrap import bootstrap
from ledger.settings import Settings

T0 = datetime(2026, 3, 1, tzinfo=UTC)


def test_a_reader_that_stops_early_gets_no_traceback(
        tmp_path: Path, crawl_ledger_bin: str,
        cli_env: Callable[..., dict[str, str]]) -> None:
    data = tmp_path / "data"
    ledger = bootstrap(Settings.from_env({**LOOPBACK_ENV, "LEDGER_DATA_DIR": str(data)}))
    try:  # far more output than a pipe holds (~64 KiB)
        for n in range(600):
            ledger.app.register_store(name=f"Store {n}", base_url=f"https://s{n}.example",
                                      platform="shopify", now=T0)
    finally:
        ledger.close()
    tail = subprocess.Popen([crawl_ledger_bin, "events", "tail", "--json"],
                            env=cli_env(data), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert tail.stdout is not None and tail.stderr is not None
    first = tail.stdout.readline()
    assert first.startswith(b'{"event_id":')
    tail.stdout.close()  # the reader goes away, as `head -1` does
    assert tail.wait(timeout=60) == 141
    with tail.stderr:
        assert tail.stderr.read() == b""
