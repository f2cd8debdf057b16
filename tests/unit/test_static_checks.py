"""The house rules, checked like behaviour: ruff on the tree, mypy --strict on the packages."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ["domain", "projections", "workers", "streams", "analytics", "ledger"]


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=600)


def test_ruff_finds_nothing() -> None:
    result = run("ruff", "check", "--output-format", "concise", ".")
    assert result.returncode == 0, result.stdout + result.stderr


def test_mypy_strict_finds_nothing() -> None:
    result = run("mypy", *PACKAGES)
    assert result.returncode == 0, result.stdout + result.stderr
