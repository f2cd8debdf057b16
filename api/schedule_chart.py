"""The schedule page's chart: runs per time slot as SVG columns (attributes, not inline
styles, so the Content-Security-Policy lets them through)."""

from __future__ import annotations

from dataclasses import dataclass

from runtime.slots import Distribution

__all__ = ["Column", "SlotChart", "slot_chart"]

WIDTH, HEIGHT, BASE = 960, 220, 190  # BASE: the y of the columns' foot (labels below)


@dataclass(frozen=True)
class Column:
    x: float
    y: float
    width: float
    height: float
    at: str  # ISO start of the slot
    runs: int


@dataclass(frozen=True)
class SlotChart:
    width: int
    height: int
    base: int
    columns: list[Column]
    labels: list[tuple[float, str]]  # x, "HH:MM" (or "Mon 08:00" past one day)
    busiest: int
    total: int
    score: float


def slot_chart(found: Distribution, labels: int = 8) -> SlotChart:
    """One column per slot, scaled to the busiest; about `labels` time labels."""
    slots = len(found.counts)
    step = WIDTH / slots
    top = max(found.counts, default=0) or 1
    columns = []
    for index, runs in enumerate(found.counts):
        height = round((BASE - 10) * runs / top, 1)
        columns.append(Column(round(index * step, 1), round(BASE - height, 1),
                              round(max(step - 1, 0.5), 1), height,
                              found.slot_start(index).isoformat(), runs))
    every = max(1, slots // labels)
    long = slots * found.slot > 86400
    marks = [(round(i * step, 1), found.slot_start(i).strftime("%a %H:%M" if long else "%H:%M"))
             for i in range(0, slots, every)]
    return SlotChart(WIDTH, HEIGHT, BASE, columns, marks, max(found.counts, default=0),
                     sum(found.counts), found.score)
