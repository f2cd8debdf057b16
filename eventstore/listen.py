"""Waking a reader when new events commit: PostgreSQL LISTEN on the recorder's channel.

The PostgreSQL recorder sends `NOTIFY <channel>` in every insert transaction;
`NotifyWakeup` LISTENs on its own connection and returns from `wait` as soon as one
arrives (or after the timeout, so a lost connection or a missed notification only
costs one poll interval). Other stores have no channel: their readers poll
(`streams.wakeup.PollWakeup`).
"""

from __future__ import annotations

import logging
import time
from typing import Any

import psycopg
from psycopg.sql import SQL, Identifier

__all__ = ["NotifyWakeup", "listener_for"]

log = logging.getLogger(__name__)


class NotifyWakeup:
    """LISTEN on the recorder's channel: returns when an insert commits or after the timeout."""

    def __init__(self, conninfo: str, channel: str) -> None:
        self._listen = SQL("LISTEN {0}").format(Identifier(channel))
        self._conninfo = conninfo
        self._conn: Any = None
        self._open()

    def _open(self) -> None:
        self._conn = psycopg.connect(self._conninfo, autocommit=True)
        self._conn.execute(self._listen)

    def wait(self, timeout: float) -> bool:
        """Wait at most `timeout` seconds; True when woken by a commit."""
        try:
            if self._conn is None or self._conn.closed:
                self._open()
            return any(True for _ in self._conn.notifies(timeout=timeout, stop_after=1))
        except Exception as error:  # the database restarted: poll until it is back
            log.warning("relay: lost the LISTEN connection (%s); polling", error)
            self._conn = None
            time.sleep(timeout)
            return False

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None


def listener_for(recorder: Any, conninfo: str | None) -> NotifyWakeup | None:
    """A LISTEN for a PostgreSQL recorder (on the channel it notifies), else None."""
    channel = getattr(recorder, "channel_name", None)
    if conninfo and channel:
        return NotifyWakeup(conninfo, channel)
    return None
