"""A live view of a running crawl (rich), refreshed as the runner reports."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rich.console import Console
from rich.live import Live
from rich.table import Table

from ledger.drivers.embedded import RunStats


def stats_table(stats: RunStats, title: str = "crawl-ledger") -> Table:
    table = Table(title=title, title_justify="left", show_header=False, box=None)
    table.add_column(style="bold")
    table.add_column(justify="right")
    table.add_row("dispatched", str(stats.dispatched))
    table.add_row("in flight / queued", f"{stats.in_flight} / {stats.queued}")
    table.add_row("succeeded", f"[green]{stats.succeeded}[/green]")
    table.add_row("failed", f"[red]{stats.failed}[/red]" + (
        "  (" + ", ".join(f"{k} {v}" for k, v in stats.failures.most_common()) + ")"
        if stats.failures else ""))
    table.add_row("products seen", str(stats.products_seen))
    table.add_row("events recorded", str(stats.events))
    if stats.images_stored or stats.images_failed:
        table.add_row("images stored / failed", f"{stats.images_stored} / {stats.images_failed}")
    if stats.alerts_delivered or stats.alerts_failed:
        table.add_row("alerts delivered / failed attempts",
                      f"{stats.alerts_delivered} / {stats.alerts_failed}")
    if stats.reaped:
        table.add_row("leases expired", str(stats.reaped))
    return table


class LiveStats:
    """`with LiveStats() as live: runner(on_change=live.update)`; quiet when not a terminal."""

    def __init__(self, title: str = "crawl-ledger", console: Console | None = None,
                 extra: Callable[[], str] | None = None) -> None:
        self.console = console or Console()
        self.title = title
        self.extra = extra
        self._live = Live(console=self.console, refresh_per_second=4, transient=False)

    def update(self, stats: RunStats) -> None:
        title = self.title + (f" — {self.extra()}" if self.extra else "")
        self._live.update(stats_table(stats, title))

    def __enter__(self) -> LiveStats:
        if self.console.is_terminal:
            self._live.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.console.is_terminal:
            self._live.__exit__(*exc)
