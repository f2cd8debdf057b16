"""The README's promises that code can check: its example consumer is the tested one."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_readme_shows_the_tested_consumer_example_verbatim() -> None:
    readme = (ROOT / "README.md").read_text()
    example = (ROOT / "docs" / "consumer_example.py").read_text()
    assert f"```python\n{example}```" in readme


def test_readme_names_the_two_commands_and_ci_runs_the_test_one() -> None:
    readme = (ROOT / "README.md").read_text()
    assert "make demo" in readme and "make test" in readme
    assert "make test" in (ROOT / ".ci" / "run").read_text()
