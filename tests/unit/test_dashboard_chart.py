"""The product chart's axes and the dashboard's money and stock words."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from api.chart import PAD, WIDTH, build_chart
from api.formatting import money, stock
from domain.envelope import Envelope

T0 = datetime(2026, 1, 5, 8, 0, tzinfo=UTC)


def event(kind: str, at: datetime, version: int, **payload: Any) -> Envelope:
    return Envelope(event_id=f"e{version}", position=version, stream_id="p",
                    stream_type="Product", version=version, event_type=f"Product.{kind}",
                    schema_version=1, occurred_at=at.isoformat(), recorded_at=at.isoformat(),
                    payload=payload)


def observed(at: datetime, version: int, price: str, availability: str = "in_stock"
             ) -> Envelope:
    return event("Observed", at, version, availability=availability, job_id="j",
                 offers=[{"price": price, "currency": "USD"}])


def test_an_old_history_fills_the_chart_even_when_it_ends_out_of_stock() -> None:
    history = [observed(T0, 1, "10.00"), observed(T0 + timedelta(hours=4), 2, "12.00"),
               event("WentOutOfStock", T0 + timedelta(hours=8), 3),
               observed(T0 + timedelta(hours=8), 4, "12.00", "out_of_stock")]
    chart = build_chart(history)
    assert chart is not None
    xs = [p.x for p in chart.points]
    assert xs[0] == PAD and xs[-1] == WIDTH - PAD  # first to latest event, not to "now"
    assert xs[1] == (PAD + WIDTH - PAD) / 2
    assert chart.shaded == [(WIDTH - PAD, WIDTH - PAD)]  # out of stock since the last event


def test_short_ranges_label_hours_and_no_label_repeats() -> None:
    short = build_chart([observed(T0, 1, "1"), observed(T0 + timedelta(hours=8), 2, "2")])
    assert short is not None
    assert [t[2] for t in short.x_ticks] == ["Jan 05 08:00", "Jan 05 12:00", "Jan 05 16:00"]
    same = build_chart([observed(T0, 1, "1"), observed(T0, 2, "2")])
    assert same is not None and [t[2] for t in same.x_ticks] == ["Jan 05 08:00"]
    long = build_chart([observed(T0, 1, "1"), observed(T0 + timedelta(days=10), 2, "2")])
    assert long is not None
    assert [t[2] for t in long.x_ticks] == ["2026-01-05", "2026-01-10", "2026-01-15"]


def test_money_in_the_currency_s_own_format() -> None:
    assert money("17.6", "USD") == "$17.60"
    assert money("4.5", "eur") == "€4.50"
    assert money("1234.5", "CAD") == "CA$1,234.50"
    assert money(None, "USD") == "—"
    assert money("12", "not-a-currency") == "12 not-a-currency"  # as recorded, not hidden
    assert money("12", None) == "12"


def test_stock_in_words() -> None:
    assert stock("out_of_stock") == "out of stock"
    assert stock("in_stock") == "in stock"
    assert stock(None) == "stock unknown"
    assert stock("back_order") == "back order"
