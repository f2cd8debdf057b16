"""`crawl-ledger demo` as a user runs it: a child process, its own data dir.

It exits 0, prints the summary and writes a real PNG chart; its simulated history
ends when it finishes (a dashboard served afterwards shows today); a second run
replaces the demo dir cleanly; a `demo` dir it did not create is refused and left alone.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

from backends import LOOPBACK_ENV
from PIL import Image

from domain.timeutil import parse_iso
from ledger.bootstrap import bootstrap
from ledger.drivers.demo import MARKER
from ledger.drivers.demo_report import all_envelopes
from ledger.settings import Settings

DEMO = ("demo", "--stores", "3", "--cycles", "3")
SUMMARY_ROWS = ("stores discovered", "jobs (runs)", "events recorded", "products",
                "price changes", "failures by kind")
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _demo(binary: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([binary, *DEMO], env=env, capture_output=True, text=True, timeout=120,
                          stdin=subprocess.DEVNULL, check=False)


def _events_in(demo_dir: Path) -> int:
    return len(_recorded_times(demo_dir))


def _recorded_times(demo_dir: Path) -> list[datetime]:
    ledger = bootstrap(Settings.from_env({**LOOPBACK_ENV, "LEDGER_DATA_DIR": str(demo_dir)}))
    try:
        return [parse_iso(e.recorded_at) for e in all_envelopes(ledger)]
    finally:
        ledger.close()


def _printed_events(stdout: str) -> int:
    match = re.search(r"events recorded\D+(\d+)", stdout)
    assert match, stdout
    return int(match.group(1))


def test_demo_prints_a_summary_and_draws_a_png_then_replaces_itself(
        tmp_path: Path, crawl_ledger_bin: str, cli_env: Callable[..., dict[str, str]]) -> None:
    env = cli_env(tmp_path)
    started = datetime.now(UTC).replace(microsecond=0)
    first = _demo(crawl_ledger_bin, env)
    finished = datetime.now(UTC)
    assert first.returncode == 0, first.stdout + first.stderr
    for row in SUMMARY_ROWS:
        assert row in first.stdout, (row, first.stdout)
    assert re.search(r"stores discovered\D+3\b", first.stdout), first.stdout
    demo_dir = tmp_path / "demo"
    assert _printed_events(first.stdout) == _events_in(demo_dir) > 0
    # the simulated clock ends at the wall clock of the demo's start (its cycles lie one
    # catalog interval, 4 h, apart before it), so nothing is recorded in the future
    times = _recorded_times(demo_dir)
    assert started - timedelta(hours=4) <= max(times) <= finished, (started, max(times))
    assert min(times) >= started - timedelta(hours=4 * 3), min(times)

    chart = demo_dir / "price-history.png"
    data = chart.read_bytes()
    assert data.startswith(PNG_MAGIC) and len(data) > 10_000
    with Image.open(chart) as image:
        image.verify()
        assert image.format == "PNG" and min(image.size) >= 200

    (demo_dir / "left-over.txt").write_text("from the first run\n")
    second = _demo(crawl_ledger_bin, env)
    assert second.returncode == 0, second.stdout + second.stderr
    assert not (demo_dir / "left-over.txt").exists()
    assert (demo_dir / MARKER).exists() and (demo_dir / "price-history.png").exists()
    assert _printed_events(second.stdout) == _events_in(demo_dir)  # only the second run's


def test_demo_refuses_a_demo_dir_it_did_not_create(
        tmp_path: Path, crawl_ledger_bin: str, cli_env: Callable[..., dict[str, str]]) -> None:
    precious = tmp_path / "demo"
    precious.mkdir()
    (precious / "thesis.tex").write_text("years of work\n")
    result = _demo(crawl_ledger_bin, cli_env(tmp_path))
    assert result.returncode == 2, result.stdout + result.stderr
    message = result.stderr.strip()
    assert message.startswith("crawl-ledger: error:") and "\n" not in message, message
    assert "is not a crawl-ledger demo dir" in message and str(precious) in message, message
    assert [p.name for p in precious.iterdir()] == ["thesis.tex"]
    assert (precious / "thesis.tex").read_text() == "years of work\n"
