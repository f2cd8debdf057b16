"""A product's price and stock chart, drawn as SVG on the server (no chart library).

From the product's events: each `Observed` is a point (the lowest price a buyer pays
across its offers, the regular price when it is higher, its availability and the job
that saw it); the price line steps between points; out-of-stock periods
(`WentOutOfStock` until `BackInStock`, or until the product's latest event) are shaded.
The time axis spans the product's own history, first observation to latest event, so
a history recorded on a simulated clock (the demo) or long ago fills the chart rather
than being squeezed against "now". The page's script only
shows a point's details on hover or focus.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal, InvalidOperation
from typing import Any

from domain.envelope import Envelope

__all__ = ["Chart", "build_chart"]

WIDTH, HEIGHT, PAD = 760, 260, 44


@dataclass(frozen=True)
class Point:
    x: float
    y: float
    at: str
    price: str
    regular: str | None
    currency: str
    availability: str
    job_id: str


@dataclass(frozen=True)
class Chart:
    width: int
    height: int
    points: list[Point]
    line: str  # SVG path of the paid price (steps)
    shaded: list[tuple[float, float]]  # x ranges out of stock
    y_ticks: list[tuple[float, str]]
    x_ticks: list[tuple[float, str, str]]  # x, ISO time, label (no label repeated)


def _paid(offers: list[dict[str, Any]]) -> tuple[Decimal, Decimal | None, str] | None:
    best: tuple[Decimal, Decimal | None, str] | None = None
    for offer in offers:
        try:
            regular = Decimal(str(offer["price"])) if offer.get("price") is not None else None
            special = (Decimal(str(offer["special_price"]))
                       if offer.get("special_price") is not None else None)
        except (InvalidOperation, ValueError):
            continue
        paid = special if special is not None else regular
        if paid is None:
            continue
        if best is None or paid < best[0]:
            shown_regular = regular if regular is not None and regular > paid else None
            best = (paid, shown_regular, str(offer.get("currency") or ""))
    return best


def build_chart(history: list[Envelope]) -> Chart | None:
    """None when the product has no priced observation yet."""
    raw: list[tuple[datetime, Decimal, Decimal | None, str, str, str]] = []
    out: list[tuple[datetime, datetime | None]] = []
    for env in history:
        kind = env.event_type.rsplit(".", 1)[-1]
        at = datetime.fromisoformat(env.occurred_at)
        if kind == "Observed":
            paid = _paid(list(env.payload.get("offers") or []))
            if paid is not None:
                raw.append((at, *paid, str(env.payload.get("availability") or "unknown"),
                            str(env.payload.get("job_id") or "")))
        elif kind == "WentOutOfStock":
            out.append((at, None))
        elif kind == "BackInStock" and out and out[-1][1] is None:
            out[-1] = (out[-1][0], at)
    if not raw:
        return None
    start = raw[0][0]
    end = max(raw[-1][0], datetime.fromisoformat(history[-1].occurred_at))
    span = max((end - start).total_seconds(), 1.0)
    prices = [p for r in raw for p in (r[1], r[2]) if p is not None]
    low, high = min(prices), max(prices)
    if low == high:
        low, high = low * Decimal("0.9"), high * Decimal("1.1") + Decimal("0.01")

    def x(at: datetime) -> float:
        return round(PAD + (WIDTH - 2 * PAD) * (at - start).total_seconds() / span, 1)

    def y(price: Decimal) -> float:
        return round(HEIGHT - PAD - (HEIGHT - 2 * PAD) * float((price - low) / (high - low)), 1)

    points = [Point(x(at), y(paid), at.isoformat(), f"{paid:f}",
                    None if regular is None else f"{regular:f}", currency, availability, job)
              for at, paid, regular, currency, availability, job in raw]
    path = f"M{points[0].x},{points[0].y}"
    for before, point in zip(points, points[1:]):
        path += f" H{point.x} V{point.y}" if point.y != before.y else f" H{point.x}"
    if len(points) == 1:
        path += f" H{WIDTH - PAD}"
    shaded = [(x(max(a, start)), x(b if b is not None else end)) for a, b in out]
    ticks = [low + (high - low) * Decimal(i) / 4 for i in range(5)]
    y_ticks = [(y(t), f"{t:.2f}") for t in ticks]
    return Chart(WIDTH, HEIGHT, points, path, shaded, y_ticks, _time_ticks(start, end, x))


def _time_ticks(start: datetime, end: datetime, x: Callable[[datetime], float]
                ) -> list[tuple[float, str, str]]:
    """Start, middle and end of the time axis: dates over long ranges, dates and hours
    over two days or less; a label equal to the previous one is left out."""
    short = end - start <= timedelta(days=2)
    ticks: list[tuple[float, str, str]] = []
    for at in (start, start + (end - start) / 2, end):
        label = at.strftime("%b %d %H:%M" if short else "%Y-%m-%d")
        if not ticks or ticks[-1][2] != label:
            ticks.append((x(at), at.isoformat(), label))
    return ticks
