"""No command prints a password: with the store (and broker) URL carrying a known
password, every command's stdout and stderr is searched for it, as written and
decoded. The store is unreachable on purpose, so the error paths are exercised."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from ledger.host.redact import redact, redact_url, secrets_in

PASSWORD = "Sec ret"
STORE = "postgresql://u:Sec%20ret@127.0.0.1:1/x"
BROKER = "kafka://u:Sec%20ret@127.0.0.1:1"
FORMS = (PASSWORD, "Sec%20ret", "Sec+ret")

COMMANDS = [
    ["stores", "list"],
    ["stores", "list", "--json"],
    ["stores", "add", "Shop", "https://shop.example", "--platform", "generic"],
    ["jobs", "list", "--json"],
    ["jobs", "show", "00000000-0000-0000-0000-000000000000"],
    ["products", "list"],
    ["events", "tail", "--json"],
    ["events", "export", "-o", "-"],
    ["projections", "rebuild"],
    ["run", "--until-idle"],
    ["audit", "verify", "--json"],
    ["analytics", "sql", "SELECT 1"],
    ["demo", "--stores", "1", "--cycles", "1", "--store", STORE],
    ["relay"],
    ["worker"],
]


@pytest.mark.parametrize("argv", COMMANDS, ids=lambda argv: " ".join(argv[:2]))
def test_no_command_prints_the_password(argv: list[str], tmp_path: Path, crawl_ledger_bin: str,
                                        cli_env: Callable[..., dict[str, str]]) -> None:
    env = cli_env(tmp_path / "data", LEDGER_STORE=STORE, LEDGER_BROKER=BROKER)
    try:
        result = subprocess.run([crawl_ledger_bin, *argv], env=env, capture_output=True,
                                text=True, timeout=60, stdin=subprocess.DEVNULL, check=False)
        out, err, code = result.stdout, result.stderr, result.returncode
    except subprocess.TimeoutExpired as slow:  # a daemon retrying: its output so far counts
        out, err, code = _text(slow.stdout), _text(slow.stderr), None
    assert code != 0, (out, err)
    assert out + err, "the command said nothing"
    for form in FORMS:
        assert form not in out and form not in err, f"{form!r} printed by {argv}: {out}{err}"


def _text(data: bytes | str | None) -> str:
    return data.decode() if isinstance(data, bytes) else (data or "")


def test_redaction_masks_urls_conninfo_and_configured_secrets() -> None:
    secrets = secrets_in({"LEDGER_STORE": STORE, "LEDGER_BROKER": "kafka://127.0.0.1:9092"})
    assert set(secrets) == {"Sec%20ret", "Sec ret"}
    assert redact_url(STORE) == "postgresql://u:***@127.0.0.1:1/x"
    assert redact_url("postgresql://u@127.0.0.1/x") == "postgresql://u@127.0.0.1/x"
    text = "failed: host=127.0.0.1 password='Sec ret' dbname=x; then Sec ret again"
    masked = redact(text, secrets)
    assert PASSWORD not in masked and "dbname=x" in masked and "***" in masked
