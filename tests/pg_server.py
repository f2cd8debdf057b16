"""A private PostgreSQL server on a free loopback port, for tests that restart it: the
shared PostgreSQL of the other tests is never touched."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

BINARIES = sorted(Path("/usr/lib/postgresql").glob("*/bin/pg_ctl"))


@dataclass
class PrivatePostgres:
    base: Path
    port: int

    @property
    def url(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def ctl(self, *args: str) -> None:
        options = (f"-p {self.port} -k {self.base} -c listen_addresses=127.0.0.1 "
                   "-c fsync=off -c max_connections=60")
        _as_postgres([str(BINARIES[-1]), "-D", str(self.base / "data"), "-o", options,
                      "-l", str(self.base / "log"), "-w", *args])


def _as_postgres(argv: list[str]) -> None:
    prefix = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
    done = subprocess.run(prefix + argv, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, f"{argv[0]} failed: {done.stderr or done.stdout}"


@contextmanager
def private_postgres() -> Iterator[PrivatePostgres]:
    if not BINARIES or (os.geteuid() == 0 and shutil.which("runuser") is None):
        reason = "PostgreSQL server binaries (initdb, pg_ctl) are not installed"
        if os.environ.get("CI") == "true":  # a backend test must not skip in CI
            pytest.fail(reason)
        pytest.skip(reason)
    base = Path(tempfile.mkdtemp(prefix="ledger-pg-"))
    if os.geteuid() == 0:
        shutil.chown(base, "postgres")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = PrivatePostgres(base, port)
    try:
        _as_postgres([str(BINARIES[-1].with_name("initdb")), "-D", str(base / "data"),
                      "-A", "trust", "-U", "postgres", "--no-sync"])
        server.ctl("start")
        yield server
    finally:
        subprocess.run(["runuser", "-u", "postgres", "--", str(BINARIES[-1]), "-D",
                        str(base / "data"), "-m", "immediate", "stop"] if os.geteuid() == 0
                       else [str(BINARIES[-1]), "-D", str(base / "data"), "-m", "immediate",
                             "stop"], capture_output=True, timeout=60, check=False)
        shutil.rmtree(base, ignore_errors=True)
