"""One runner per event store, not per data directory, on both backends: a second
`crawl-ledger run` on the same store (another data dir) stops at once, naming the
holder, and records nothing; once the holder is gone the store can be taken."""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import subprocess
from collections.abc import AsyncIterator, Callable
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


def test_a_released_store_is_free_at_once(store_url: str, tmp_path: Path) -> None:
    """A runner restarted right after the last one stopped takes the store (PostgreSQL
    frees a closed session's lock only once its server process has exited: the lock is
    given back before the connection closes)."""
    for n in range(12):
        # as `run` does: the store held while a ledger is open, both closed together
        with backend_for(settings(store_url, tmp_path / f"run{n}")).runner_lock(
                Holder.this_process()):
            bootstrap(settings(store_url, tmp_path / f"run{n}")).close()


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


def test_ctrl_c_while_run_starts_is_one_line_and_frees_the_store(
        store_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """Ctrl-C before the runner installs its own handler (while it connects and starts
    its crawler) used to end `crawl-ledger run` with a Python traceback."""
    import ledger.cli.run
    from ledger.cli import main

    entered: list[str] = []

    @contextlib.asynccontextmanager
    async def interrupted(*_: object) -> AsyncIterator[None]:
        entered.append("crawler")
        raise KeyboardInterrupt  # what a Ctrl-C raises on the loop's thread
        yield  # pragma: no cover

    monkeypatch.setattr(ledger.cli.run, "runner_crawler", interrupted)
    monkeypatch.setenv("LEDGER_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("LEDGER_STORE", store_url)
    capsys.readouterr()
    assert main(["run", "--until-idle"]) == 130
    out, err = capsys.readouterr()
    assert entered == ["crawler"]
    assert err.strip().splitlines() == ["crawl-ledger: interrupted"]
    with backend_for(settings(store_url, tmp_path / "other")).runner_lock(Holder.this_process()):
        pass  # the interrupted run let go of the store


def test_sigterm_while_run_starts_is_one_line_and_frees_the_store(
        store_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """SIGTERM (a deploy, `docker stop`) before the runner installs its graceful stop
    used to kill `crawl-ledger run` on the spot, silently (status 143, nothing said).
    Now it ends as Ctrl-C does: the crawler's and the ledger's cleanup run, one line."""
    import signal

    import ledger.cli.run
    from ledger.cli import main

    closed: list[str] = []

    @contextlib.asynccontextmanager
    async def terminated(*_: object) -> AsyncIterator[None]:
        os.kill(os.getpid(), signal.SIGTERM)  # delivered to this, the main, thread
        try:
            await asyncio.Event().wait()  # what the signal interrupts: the start
            yield  # pragma: no cover
        finally:
            closed.append("crawler")

    monkeypatch.setattr(ledger.cli.run, "runner_crawler", terminated)
    monkeypatch.setenv("LEDGER_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("LEDGER_STORE", store_url)
    before = signal.getsignal(signal.SIGTERM)
    capsys.readouterr()
    assert main(["run", "--until-idle"]) == 143
    _, err = capsys.readouterr()
    assert closed == ["crawler"]
    assert err.strip().splitlines() == ["crawl-ledger: terminated"]
    assert signal.getsignal(signal.SIGTERM) is before  # main gives the signal back
    with backend_for(settings(store_url, tmp_path / "other")).runner_lock(Holder.this_process()):
        pass  # the terminated run let go of the store
