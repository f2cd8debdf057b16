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
    assert [t[2] for t in short.x_ticks] == ["Jan 05 08:00", "Jan 05 10:00", "Jan 05 12:00",
                                             "Jan 05 14:00", "Jan 05 16:00"]
    same = build_chart([observed(T0, 1, "1"), observed(T0, 2, "2")])
    assert same is not None and [t[2] for t in same.x_ticks] == ["Jan 05 08:00"]
    days = build_chart([observed(T0, 1, "1"), observed(T0 + timedelta(days=3), 2, "2")])
    assert days is not None  # three days: five ticks, four dates, none twice
    assert [t[2] for t in days.x_ticks] == ["Jan 05", "Jan 06", "Jan 07", "Jan 08"]
    long = build_chart([observed(T0, 1, "1"), observed(T0 + timedelta(days=10), 2, "2")])
    assert long is not None
    assert [t[2] for t in long.x_ticks] == ["Jan 05", "Jan 07", "Jan 10", "Jan 12", "Jan 15"]
    year = build_chart([observed(T0, 1, "1"), observed(T0 + timedelta(days=800), 2, "2")])
    assert year is not None and [t[2] for t in year.x_ticks][0] == "2026-01"


def menu(at: datetime, version: int, eighth: tuple[str, str | None], gram: str,
         medical: str, job: str = "j") -> Envelope:
    """A dispensary menu's observation: 1/8oz (price, special) and 1g recreational, 1g
    medical."""
    return event("Observed", at, version, availability="in_stock", job_id=job, offers=[
        {"option": "1/8oz", "price": eighth[0], "special_price": eighth[1], "currency": "USD",
         "pricing_type": "recreational"},
        {"option": "1g", "price": gram, "currency": "USD", "pricing_type": "recreational"},
        {"option": "1g", "price": medical, "currency": "USD", "pricing_type": "medical"}])


def test_one_series_per_option_and_pricing_type_with_old_to_new() -> None:
    history = [menu(T0, 1, ("45.00", None), "12.00", "10.00", "ja"),
               menu(T0 + timedelta(days=1), 2, ("45.00", "39.00"), "12.00", "10.00", "jb"),
               menu(T0 + timedelta(days=2), 3, ("45.00", None), "11.00", "10.00", "jc")]
    chart = build_chart(history)
    assert chart is not None
    labels = [s.label for s in chart.series]
    assert labels == ["1g · medical", "1/8oz · recreational", "1g · recreational"]
    assert len({s.colour for s in chart.series}) == 3  # each its own colour
    eighth = chart.series[1]
    assert [p.price for p in eighth.points] == ["45.00", "39.00", "45.00"]
    assert [p.old for p in eighth.points] == [None, "45.00", "39.00"]  # old -> new
    assert [p.regular for p in eighth.points] == [None, "45.00", None]  # above the special
    assert eighth.regular_line is not None and [p.job_id for p in eighth.points] == [
        "ja", "jb", "jc"]
    gram = chart.series[2]
    assert [p.old for p in gram.points] == [None, None, "12.00"]
    assert chart.series[0].regular_line is None
    assert len({(p.x, p.y) for p in chart.points}) >= 5  # distinguishable points


def test_a_range_keeps_the_latest_days_and_enters_at_the_price_held_then() -> None:
    history = [menu(T0 + timedelta(days=d), d + 1, (price, None), "12.00", "10.00")
               for d, price in ((0, "50.00"), (20, "45.00"), (27, "40.00"), (29, "40.00"))]
    week = build_chart(history, "7d")
    assert week is not None and week.range == "7d"
    eighth = week.series[1]
    assert [p.price for p in eighth.points] == ["40.00", "40.00"]  # days 27 and 29
    assert eighth.points[0].old == "45.00"  # it moved from the price held when the week began
    assert eighth.line.startswith(f"M{float(PAD)},")  # the line enters at the left edge
    assert week.x_ticks[0][1] == (T0 + timedelta(days=22)).isoformat()
    every = build_chart(history, "bogus")
    assert every is not None and every.range == "all" and len(every.series[1].points) == 4


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
