"""A product's price and stock chart, drawn as SVG on the server (no chart library).

From the product's events: every offer of each `Observed` is a point of its series —
one series per option (weight, size, variant) and pricing type (recreational,
medical, regular) — at the price a buyer pays (the special price when there is one),
with the regular price beside it when that is higher (drawn as a dotted line). Each
point knows the series' price before it (`old`, when it moved), its availability and
the job that saw it, so the page can show "old → new" and link to the job and to the
raw page behind the point (`/jobs/{job}/raw?at=`). Out-of-stock periods
(`WentOutOfStock` until `BackInStock`, or until the product's latest event) are shaded.

The time axis spans the product's own history (its latest event is "now"), so a history
recorded on a simulated clock (the demo) or long ago fills the chart rather than being
squeezed against the wall clock; a range (`RANGES`: the last 7 or 30 days of that
history, or all of it) narrows it, each series entering at the price it had then.
Colours are classes (`s0`…`s7` in the stylesheet), never inline styles, so the page's
Content-Security-Policy holds.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal, InvalidOperation
from typing import Any

from domain.envelope import Envelope

__all__ = ["COLOURS", "RANGES", "Chart", "Point", "Series", "build_chart"]

WIDTH, HEIGHT, PAD = 760, 260, 44
#: the ranges the page offers (query `range=`): days back from the latest event, or all
RANGES: dict[str, int | None] = {"7d": 7, "30d": 30, "all": None}
#: distinct colour classes in the stylesheet (series beyond wrap around, dashed)
COLOURS = 8


@dataclass(frozen=True)
class Point:
    x: float
    y: float
    at: str
    price: str
    regular: str | None
    old: str | None  # the series' price before this point, when it moved
    currency: str
    availability: str
    job_id: str
    series: int


@dataclass(frozen=True)
class Series:
    index: int
    option: str
    pricing_type: str
    line: str  # SVG path of the paid price (steps)
    regular_line: str | None  # SVG path of the regular price while a special is below it
    points: list[Point]

    @property
    def label(self) -> str:
        return self.option if self.pricing_type == "regular" else \
            f"{self.option} · {self.pricing_type}"

    @property
    def colour(self) -> str:
        """The series' classes: its colour, dashed once the colours wrap around."""
        return f"s{self.index % COLOURS}" + (" wrap" if self.index >= COLOURS else "")


@dataclass(frozen=True)
class Chart:
    width: int
    height: int
    series: list[Series]
    shaded: list[tuple[float, float]]  # x ranges out of stock
    y_ticks: list[tuple[float, str]]
    x_ticks: list[tuple[float, str, str]]  # x, ISO time, label (no label repeated)
    range: str

    @property
    def points(self) -> list[Point]:
        return [p for s in self.series for p in s.points]


@dataclass(frozen=True)
class _Seen:
    at: datetime
    paid: Decimal
    regular: Decimal | None
    currency: str
    availability: str
    job_id: str


def _price(value: Any) -> Decimal | None:
    if value is None:
        return None
    try:
        found = Decimal(str(value))
    except (InvalidOperation, ValueError):
        return None
    return found if found.is_finite() else None


def _series_seen(history: list[Envelope]) -> dict[tuple[str, str], list[_Seen]]:
    """Each (option, pricing type)'s observations in time order."""
    found: dict[tuple[str, str], list[_Seen]] = {}
    for env in history:
        if not env.event_type.endswith(".Observed"):
            continue
        at = datetime.fromisoformat(env.occurred_at)
        availability = str(env.payload.get("availability") or "unknown")
        for offer in env.payload.get("offers") or []:
            regular, special = _price(offer.get("price")), _price(offer.get("special_price"))
            paid = special if special is not None else regular
            if paid is None:
                continue
            key = (str(offer.get("option") or "price"), str(offer.get("pricing_type") or "regular"))
            found.setdefault(key, []).append(_Seen(
                at, paid, regular if regular is not None and regular > paid else None,
                str(offer.get("currency") or ""), str(offer.get("availability") or availability),
                str(env.payload.get("job_id") or "")))
    return found


def _out_of_stock(history: list[Envelope]) -> list[tuple[datetime, datetime | None]]:
    out: list[tuple[datetime, datetime | None]] = []
    for env in history:
        kind = env.event_type.rsplit(".", 1)[-1]
        if kind == "WentOutOfStock":
            out.append((datetime.fromisoformat(env.occurred_at), None))
        elif kind == "BackInStock" and out and out[-1][1] is None:
            out[-1] = (out[-1][0], datetime.fromisoformat(env.occurred_at))
    return out


def build_chart(history: list[Envelope], range_name: str = "all") -> Chart | None:
    """None when the product has no priced observation yet; an unknown range is all."""
    seen = _series_seen(history)
    if not seen:
        return None
    range_name = range_name if range_name in RANGES else "all"
    first = min(s[0].at for s in seen.values())
    end = max(max(s[-1].at for s in seen.values()), datetime.fromisoformat(
        history[-1].occurred_at))
    days = RANGES[range_name]
    start = max(first, end - timedelta(days=days)) if days else first
    # each series from the range's start: the price it had then, and what came after
    shown = {key: [s for s in rows if s.at >= start] for key, rows in seen.items()}
    before = {key: next((s for s in reversed(rows) if s.at < start), None)
              for key, rows in seen.items()}
    drawn = [s for key, rows in shown.items() for s in [*rows, before[key]] if s is not None]
    prices = [p for s in drawn for p in (s.paid, s.regular) if p is not None]
    low, high = min(prices), max(prices)
    if low == high:
        low, high = low * Decimal("0.9"), high * Decimal("1.1") + Decimal("0.01")
    span = max((end - start).total_seconds(), 1.0)

    def x(at: datetime) -> float:
        return round(PAD + (WIDTH - 2 * PAD) * max((at - start).total_seconds(), 0) / span, 1)

    def y(price: Decimal) -> float:
        return round(HEIGHT - PAD - (HEIGHT - 2 * PAD) * float((price - low) / (high - low)), 1)

    series = [_one_series(index, key, shown[key], before[key], x, y, end)
              for index, key in enumerate(sorted(shown, key=lambda k: (k[1], k[0])))]
    shaded = [(x(max(a, start)), x(b if b is not None else end))
              for a, b in _out_of_stock(history) if (b or end) >= start]
    y_ticks = [(y(t), f"{t:.2f}") for t in (low + (high - low) * Decimal(i) / 4
                                            for i in range(5))]
    return Chart(WIDTH, HEIGHT, series, shaded, y_ticks, _time_ticks(start, end, x), range_name)


def _one_series(index: int, key: tuple[str, str], rows: list[_Seen], carried: _Seen | None,
                x: Callable[[datetime], float], y: Callable[[Decimal], float],
                end: datetime) -> Series:
    points: list[Point] = []
    previous = carried.paid if carried else None
    for seen in rows:
        old = f"{previous:f}" if previous is not None and previous != seen.paid else None
        points.append(Point(x(seen.at), y(seen.paid), seen.at.isoformat(), f"{seen.paid:f}",
                            None if seen.regular is None else f"{seen.regular:f}", old,
                            seen.currency, seen.availability, seen.job_id, index))
        previous = seen.paid
    # a series with no point in the range still shows the price it held through it
    steps = [(float(PAD), y(carried.paid))] if carried else []
    steps += [(p.x, p.y) for p in points]
    # the regular price only while a special is below it: to the series' next point
    ends = [p.x for p in points[1:]] + [x(end)]
    regular = " ".join(f"M{p.x},{y(Decimal(p.regular))} H{right}"
                       for p, right in zip(points, ends) if p.regular is not None)
    return Series(index, key[0], key[1], _steps(steps, x(end)), regular or None, points)


def _steps(at: list[tuple[float, float]], right: float) -> str:
    """A step line through the points, held level to the chart's right edge."""
    path = f"M{at[0][0]},{at[0][1]}"
    for before, point in zip(at, at[1:]):
        path += f" H{point[0]} V{point[1]}" if point[1] != before[1] else f" H{point[0]}"
    return path + (f" H{right}" if right > at[-1][0] else "")


def _time_ticks(start: datetime, end: datetime, x: Callable[[datetime], float]
                ) -> list[tuple[float, str, str]]:
    """Five times along the axis, labelled by what tells them apart over the range (hours
    over two days or less, days over a year or less, months beyond); a label equal to
    the previous one is left out, so a short range never repeats a date."""
    span = end - start
    form = "%b %d %H:%M" if span <= timedelta(days=2) else (
        "%b %d" if span <= timedelta(days=365) else "%Y-%m")
    ticks: list[tuple[float, str, str]] = []
    for step in range(5):
        at = start + span * step / 4
        label = at.strftime(form)
        if all(label != t[2] for t in ticks):
            ticks.append((x(at), at.isoformat(), label))
    return ticks
