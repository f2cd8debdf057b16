"""Printing for people (rich tables) and for scripts (`--json`)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from decimal import Decimal
from typing import Any

from rich.console import Console
from rich.table import Table


def _default(value: Any) -> Any:
    if isinstance(value, Decimal):
        return str(value)
    return str(value)


def print_json(value: Any) -> None:
    print(json.dumps(value, default=_default, indent=None, separators=(",", ":")))


def print_table(title: str, columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> None:
    table = Table(title=title, title_justify="left")
    for column in columns:
        table.add_column(column, overflow="fold")
    count = 0
    for row in rows:
        table.add_row(*["" if v is None else str(v) for v in row])
        count += 1
    console = Console()
    if count:
        console.print(table)
    else:
        console.print(f"{title}: none")


def short(value: str | None, size: int = 8) -> str:
    return "" if value is None else value[:size]
