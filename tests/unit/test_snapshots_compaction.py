"""Compaction and the materialised `products_latest`, on small hand-written parts."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from analytics import connect
from projections.compaction import OPEN_DATE_PARTS, SORTED_BY, compact, discard_superseded
from projections.parquet_writer import (
    LATEST,
    PART,
    ROW_GROUP_ROWS,
    latest_through,
    refresh_latest,
    write_part,
)

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
LATEST_BY_WINDOW = """
SELECT * FROM price_observations
QUALIFY row_number() OVER (PARTITION BY product_id, pricing_type, option
                           ORDER BY observed_at DESC, position DESC) = 1
ORDER BY ALL
"""


def _row(position: int, product: int, day: int, price: str, option: str = "S") -> dict[str, Any]:
    return {"observed_at": T0 + timedelta(days=day, minutes=position), "store_id": "s1",
            "store_name": "Shop", "product_id": f"p{product}", "name": f"Product {product}",
            "option": option, "price": Decimal(price), "currency": "USD",
            "pricing_type": "regular", "position": position, "event_id": f"e{position}"}


def _batch(root: Path, first: int, last: int, day: int) -> None:
    """One writer batch on one date: products in log order, not sorted."""
    rows = [_row(n, product=(7 * n) % 5, day=day, price=f"{10 + n % 3}.00",
                 option="S" if n % 2 else "L") for n in range(first, last + 1)]
    write_part(root, "price_observations", f"2026-03-0{day + 1}", first, last, rows)


def _dump(root: Path, sql: str = "SELECT * FROM price_observations ORDER BY ALL") -> list[Any]:
    con = connect(root)
    try:
        return con.sql(sql).fetchall()
    finally:
        con.close()


def _three_days(root: Path) -> None:
    for first, day in ((1, 0), (11, 0), (21, 1), (31, 1), (41, 2)):
        _batch(root, first, first + 9, day)


def test_compaction_sorts_each_closed_date_into_one_file_with_the_same_rows(tmp_path: Path) -> None:
    _three_days(tmp_path)
    before = _dump(tmp_path)
    written = compact(tmp_path)
    assert [p.relative_to(tmp_path).as_posix() for p in written] == [
        "price_observations/date=2026-03-01/part-00000000000000000001-00000000000000000020.parquet",
        "price_observations/date=2026-03-02/part-00000000000000000021-00000000000000000040.parquet",
    ]  # the newest date is still open: left alone
    assert len(list((tmp_path / "price_observations/date=2026-03-03").iterdir())) == 1
    assert _dump(tmp_path) == before
    for path in written:
        assert PART.match(path.name)
        table = pq.read_table(path)
        keys = list(zip(table["product_id"].to_pylist(), table["observed_at"].to_pylist()))
        assert keys == sorted(keys)
        assert pq.read_schema(path).metadata[SORTED_BY] == b"product_id,observed_at,position"
        assert pq.ParquetFile(path).metadata.row_group(0).num_rows <= ROW_GROUP_ROWS
    assert not list(tmp_path.rglob("*.tmp"))


def test_compaction_is_idempotent_and_merges_late_parts(tmp_path: Path) -> None:
    _three_days(tmp_path)
    compact(tmp_path)
    assert compact(tmp_path) == []
    _batch(tmp_path, 51, 55, 0)  # late rows for a compacted date
    before = _dump(tmp_path)
    (merged,) = compact(tmp_path)
    assert merged.name == "part-00000000000000000001-00000000000000000055.parquet"
    assert [p.name for p in merged.parent.iterdir()] == [merged.name]
    assert _dump(tmp_path) == before


def test_the_open_date_is_compacted_once_it_has_many_parts(tmp_path: Path) -> None:
    for n in range(OPEN_DATE_PARTS - 1):
        _batch(tmp_path, 1 + 3 * n, 3 + 3 * n, 0)
    assert compact(tmp_path) == []
    _batch(tmp_path, 100, 102, 0)
    before = _dump(tmp_path)
    (path,) = compact(tmp_path)
    assert path.name == "part-00000000000000000001-00000000000000000102.parquet"
    assert _dump(tmp_path) == before
    _batch(tmp_path, 103, 105, 0)
    assert compact(tmp_path) == []  # one new part joins it at the next compaction


def test_a_crash_between_rename_and_deletes_is_repaired(tmp_path: Path) -> None:
    _three_days(tmp_path)
    before = _dump(tmp_path)
    folder = tmp_path / "price_observations/date=2026-03-01"
    saved = {p.name: p.read_bytes() for p in folder.iterdir()}
    compact(tmp_path)
    for name, data in saved.items():  # as if killed right after the rename
        (folder / name).write_bytes(data)
    assert len(_dump(tmp_path)) > len(before)  # duplicates until repaired
    removed = discard_superseded(tmp_path)
    assert sorted(p.name for p in removed) == sorted(saved)
    assert _dump(tmp_path) == before


def test_products_latest_is_materialised_incrementally_and_equals_the_window(
        tmp_path: Path) -> None:
    _three_days(tmp_path)
    assert refresh_latest(tmp_path, 50) and latest_through(tmp_path) == 50
    assert not refresh_latest(tmp_path, 50)
    assert _dump(tmp_path, "SELECT * FROM products_latest ORDER BY ALL") == \
        _dump(tmp_path, LATEST_BY_WINDOW)
    _batch(tmp_path, 51, 60, 3)
    stale = _dump(tmp_path, "SELECT * FROM products_latest ORDER BY ALL")
    assert stale == _dump(tmp_path, LATEST_BY_WINDOW)  # the tail after `through` is read too
    compact(tmp_path)
    assert refresh_latest(tmp_path, 60) and latest_through(tmp_path) == 60
    fresh = _dump(tmp_path, "SELECT * FROM products_latest ORDER BY ALL")
    assert fresh == stale
    (tmp_path / LATEST).unlink()
    assert refresh_latest(tmp_path, 60)  # a full build equals the incremental one
    assert _dump(tmp_path, "SELECT * FROM products_latest ORDER BY ALL") == fresh


def test_products_latest_keeps_the_view_schema(tmp_path: Path) -> None:
    _three_days(tmp_path)
    plain = connect(tmp_path).sql("DESCRIBE products_latest").fetchall()
    refresh_latest(tmp_path, 50)
    assert connect(tmp_path).sql("DESCRIBE products_latest").fetchall() == plain
