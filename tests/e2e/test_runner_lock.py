"""One runner per event store, not per data directory, on both backends: a second
`crawl-ledger run` on the same store (another data dir) stops at once, naming the
holder, and records nothing; once the holder is gone the store can be taken."""

from __future__ import annotations

import os
import socket
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from backends import LOOPBACK_ENV

from eventstore import Holder, StoreLocked
from ledger.bootstrap import backend_for, bootstrap
from ledger.settings import Settings


def settings(store_url: str, data_dir: Path) -> Settings:
    return Settings.from_env({**LOOPBACK_ENV, "LEDGER_DATA_DIR": str(data_dir), "LEDGER_STORE": store_url})


def test_a_second_holder_is_refused_with_the_holders_name(store_url: str, tmp_path: Path) -> None:
    first = backend_for(settings(store_url, tmp_path / "a"))
    second = backend_for(settings(store_url, tmp_path / "b"))
    with first.runner_lock(Holder("host-a", 4242, "2026-11-24T08:00:00Z")):
        with pytest.raises(StoreLocked) as refused:
            with second.runner_lock(Holder.this_process()):
                pytest.fail("two runners held one event store")
        message = str(refused.value)
        assert "host-a" in message and "4242" in message and "2026-11-24T08:00:00Z" in message
    with second.runner_lock(Holder.this_process()) as held:  # released: free again
        assert held.pid == os.getpid()


def test_a_second_run_on_the_same_store_stops_at_once(
        store_url: str, tmp_path: Path, crawl_ledger_bin: str,
        cli_env: Callable[..., dict[str, str]]) -> None:
    opened = bootstrap(settings(store_url, tmp_path / "a"))
    before = opened.source.head()
    opened.close()
    held = backend_for(settings(store_url, tmp_path / "a"))
    with held.runner_lock(Holder.this_process()):
        result = subprocess.run([crawl_ledger_bin, "run", "--until-idle"],
                                env=cli_env(tmp_path / "b", LEDGER_STORE=store_url),
                                capture_output=True, text=True, timeout=60,
                                stdin=subprocess.DEVNULL, check=False)
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "another crawl-ledger runner holds the event store" in lines[0]
    assert f"pid {os.getpid()}" in lines[0] and socket.gethostname() in lines[0]
    after = bootstrap(settings(store_url, tmp_path / "a"))
    try:
        assert after.source.head() == before  # the refused runner recorded nothing
    finally:
        after.close()
