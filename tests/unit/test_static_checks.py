"""The house rules, checked like behaviour: ruff on the tree, mypy --strict on the packages
and the benchmarks,
and import-linter's contracts (every "never" of the architecture)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ["domain", "eventstore", "projections", "workers", "runtime", "streams", "api", "analytics",
            "simulator", "ledger", "bench"]


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=600)


def test_ruff_finds_nothing() -> None:
    result = run("ruff", "check", "--output-format", "concise", ".")
    assert result.returncode == 0, result.stdout + result.stderr


def test_mypy_strict_finds_nothing() -> None:
    result = run("mypy", *PACKAGES)
    assert result.returncode == 0, result.stdout + result.stderr


def test_import_contracts_are_kept() -> None:
    """One import-linter contract per "never" of the architecture (pyproject.toml)."""
    result = subprocess.run([str(Path(sys.executable).with_name("lint-imports")), "--no-cache"], cwd=ROOT,
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout
