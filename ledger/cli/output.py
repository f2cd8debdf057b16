"""Printing for people (rich tables) and for scripts (`--json`)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from decimal import Decimal
from typing import Any

from rich import box
from rich.console import Console
from rich.table import Table


def _default(value: Any) -> Any:
    if isinstance(value, Decimal):
        return str(value)
    return str(value)


def print_json(value: Any) -> None:
    print(json.dumps(value, default=_default, indent=None, separators=(",", ":")))


def print_table(title: str, columns: Sequence[str], rows: Iterable[Sequence[Any]],
                wide: bool = False, flexible: Sequence[str] = ()) -> None:
    """A table that fits the terminal, one line a row: the `flexible` columns (default:
    the last) share what width is left and are cut with "…", the others keep theirs (up
    to 24 characters). `wide` keeps every cell whole, folded over several lines."""
    cells = [["" if v is None else str(v) for v in row] for row in rows]
    console = Console()
    if not cells:
        console.print(f"{title}: none")
        return
    table = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, show_edge=False,
                  pad_edge=False)
    if wide:
        for column in columns:
            table.add_column(column, overflow="fold")
    else:
        give = set(flexible or columns[-1:])
        widths = [max(len(c), *(len(row[i]) for row in cells))
                  for i, c in enumerate(columns)]
        room = console.width - 3 * (len(columns) - 1) - 1  # less padding and dividers
        if sum(w for c, w in zip(columns, widths, strict=True) if c not in give) + 6 * len(give) > room:
            # a fixed column keeps its widest cell, up to 24 characters, when all do not fit
            widths = [w if c in give else min(w, 24) for c, w in zip(columns, widths, strict=True)]
        fixed = sum(w for c, w in zip(columns, widths, strict=True) if c not in give)
        left = room - fixed
        natural = {c: w for c, w in zip(columns, widths, strict=True) if c in give}
        shares: dict[str, int] = {}
        for n, column in enumerate(sorted(natural, key=natural.__getitem__)):
            shares[column] = max(6, min(natural[column], left // (len(natural) - n)))
            left -= shares[column]
        for column, width in zip(columns, widths, strict=True):
            table.add_column(column, overflow="ellipsis", no_wrap=True,
                             width=shares.get(column, width))
    for row in cells:
        table.add_row(*row)
    console.print(table)


def short(value: str | None, size: int = 8) -> str:
    return "" if value is None else value[:size]


def shown_id(value: str | None, wide: bool) -> str:
    """An id as a table shows it: its first 8 characters (which the CLI takes back as a
    unique prefix), or all of it with `--wide`."""
    return (value or "") if wide else short(value)
