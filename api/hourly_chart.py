"""The overview's "results and failures per hour" as SVG columns: results and failures
stacked per hour, scaled to the busiest hour (attributes, not inline styles, so the
Content-Security-Policy lets them through)."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["HourColumn", "HourlyChart", "hourly_chart"]

WIDTH, HEIGHT, BASE = 480, 170, 140


@dataclass(frozen=True)
class HourColumn:
    x: float
    width: float
    ok_y: float
    ok_height: float
    failed_y: float
    failed_height: float
    hour: str  # "2026-01-05T08"
    ok: int
    failed: int


@dataclass(frozen=True)
class HourlyChart:
    width: int
    height: int
    base: int
    columns: list[HourColumn]
    labels: list[tuple[float, str]]  # x, "HH:00" under about six columns


def hourly_chart(hourly: list[tuple[str, int, dict[str, int]]]) -> HourlyChart | None:
    """None when no crawl result is among the latest events."""
    if not hourly:
        return None
    step = WIDTH / len(hourly)
    top = max(ok + sum(failed.values()) for _, ok, failed in hourly) or 1
    columns = []
    for index, (hour, ok, failed_by_reason) in enumerate(hourly):
        failed = sum(failed_by_reason.values())
        ok_height = round((BASE - 10) * ok / top, 1)
        failed_height = round((BASE - 10) * failed / top, 1)
        columns.append(HourColumn(round(index * step + 1, 1), round(max(step - 2, 1), 1),
                                  round(BASE - ok_height, 1), ok_height,
                                  round(BASE - ok_height - failed_height, 1), failed_height,
                                  hour, ok, failed))
    every = max(1, len(hourly) // 6)
    labels = [(c.x, f"{c.hour[11:13]}:00") for c in columns[::every]]
    return HourlyChart(WIDTH, HEIGHT, BASE, columns, labels)
