"""A user moves the demo's ledger to a fresh data dir: `events export` -> `events import`."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path

from webhook_receiver import receiver

Run = Callable[..., subprocess.CompletedProcess[str]]


def runner(crawl_ledger_bin: str, cli_env: Callable[..., dict[str, str]]) -> Run:
    """`run(data_dir, *args, code=0)`: the CLI on that data dir, its exit code checked."""
    def run(data_dir: Path, *args: str, code: int = 0) -> subprocess.CompletedProcess[str]:
        done = subprocess.run([crawl_ledger_bin, *args], env=cli_env(data_dir), text=True,
                              capture_output=True, timeout=300, check=False)
        assert done.returncode == code, done.stderr
        return done
    return run


LISTS = (["products", "list", "--json"], ["jobs", "list", "--json"], ["stores", "list", "--json"])


def test_the_demo_exported_and_imported_lists_the_same_products_and_jobs(
        tmp_path: Path, crawl_ledger_bin: str, cli_env: Callable[..., dict[str, str]]) -> None:
    run = runner(crawl_ledger_bin, cli_env)
    run(tmp_path, "demo", "--stores", "2", "--cycles", "3")
    demo, fresh, log = tmp_path / "demo", tmp_path / "fresh", tmp_path / "demo.jsonl"
    exported = run(demo, "events", "export", "-o", str(log)).stderr
    chain = exported.split("audit chain hash at position ")[1].split(": ")[1].strip()
    imported = run(fresh, "events", "import", str(log), "--expect", chain).stdout
    assert imported.strip().endswith(chain)
    for args in LISTS:
        original = run(demo, *args).stdout
        assert original.startswith("[{") and run(fresh, *args).stdout == original
    assert run(fresh, "audit", "verify", "--expect", chain).stdout.startswith("verified:")
    again = run(fresh, "events", "import", str(log), code=2).stderr
    assert again.startswith("crawl-ledger: error: nothing imported: the event store")


def test_an_imported_subscription_gets_its_channel_back_only_as_its_events_name_it(
        tmp_path: Path, crawl_ledger_bin: str, cli_env: Callable[..., dict[str, str]]) -> None:
    run = runner(crawl_ledger_bin, cli_env)
    first, fresh, log = tmp_path / "first", tmp_path / "fresh", tmp_path / "log.jsonl"
    with receiver() as hook:
        secret = tmp_path / "hook.secret"
        secret.write_text(hook.secret)
        store = run(first, "stores", "add", "Shop", "https://shop.example", "--platform",
                    "shopify", "--json").stdout
        store_id = json.loads(store)["id"]
        made = run(first, "alerts", "add", "--store", store_id, "--back-in-stock", "--webhook",
                   hook.url, "--secret-file", str(secret), "--json").stdout
        subscription = json.loads(made)["id"]
        run(first, "events", "export", "-o", str(log))
        run(fresh, "events", "import", str(log))

        # the import carries the subscription, not its credentials
        missing = run(fresh, "alerts", "test", subscription, code=2).stderr
        assert "has no channel on this ledger" in missing and hook.requests == []
        other = run(fresh, "alerts", "set-channel", subscription, "--webhook",
                    "http://127.0.0.1:9/elsewhere", "--secret-file", str(secret), code=2).stderr
        assert len(other.strip().splitlines()) == 1 and "add a new subscription" in other
        assert hook.secret not in other
        run(fresh, "alerts", "test", subscription, code=2)  # the refusal set nothing
        run(fresh, "alerts", "set-channel", subscription, "--webhook", hook.url,
            "--secret-file", str(secret))
        run(fresh, "alerts", "test", subscription)
        assert len(hook.requests) == 1 and hook.requests[0].signature_ok
