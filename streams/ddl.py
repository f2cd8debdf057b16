"""Creating tables from several processes at once.

`CREATE TABLE IF NOT EXISTS` is not safe against a concurrent creator in
PostgreSQL: the loser fails on the catalog's unique index (or with "already
exists"). The tables exist after that, so trying again succeeds.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from psycopg import errors

RACES = (errors.UniqueViolation, errors.DuplicateTable, errors.DuplicateObject)


def create_racing(create: Callable[[], None], attempts: int = 5) -> None:
    """Run `create` (idempotent DDL), again if it lost a race with another creator."""
    for attempt in range(attempts):
        try:
            create()
            return
        except RACES:
            if attempt == attempts - 1:
                raise
            time.sleep(0.1 * (attempt + 1))


__all__ = ["create_racing"]
