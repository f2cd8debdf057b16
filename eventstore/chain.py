"""The audit hash chain over the stored event records, kept beside them as they are written.

    link(0) = sha256("crawl-ledger audit v2")
    link(n) = sha256(link(n-1) || record(n))

where record(n) is the n-th stored event in notification-id order, every column
exactly as stored::

    b"<notification id>:<version>:<len id>:<len topic>:<len state>:" id topic state

(decimal numbers; the lengths in bytes split the three texts, so no two records
encode alike). The originator id is its 32 hex digits: the text SQLite holds (as
it is, so a rewritten id is a different record), PostgreSQL's `uuid` written the
same way. A value of another type in an integer column (only an edit puts one
there) is written quoted, in hex.

Each recorder (SQLite and PostgreSQL) stores an event's link in the column `link` of
its row, inserted with it, under the write lock that orders notification ids
(SQLite's one writer; PostgreSQL's EXCLUSIVE table lock), so links follow
notification-id order and an edit made in the database is caught without any
checkpoint. Each backend adds the column to a store written before it existed and
chains the stored events once (`backfill`: the upgrade).
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any
from uuid import UUID

__all__ = ["GENESIS", "ChainRow", "link_events", "link_rows", "next_link", "record_bytes"]

log = logging.getLogger(__name__)

GENESIS = hashlib.sha256(b"crawl-ledger audit v2").digest()
#: (notification id, originator id as stored, version, topic, state) of one stored event
ChainRow = tuple[int, Any, Any, Any, Any]
_sha256 = hashlib.sha256


def _text(value: Any) -> bytes:
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value)
    if isinstance(value, UUID):
        return value.hex.encode()
    return str(value).encode("utf-8", "surrogatepass")


def _number(value: Any) -> bytes:
    """An integer column in decimal; anything else a column held (only an edit puts text
    in SQLite's integer columns) quoted and hex-encoded, so it is never read as a number."""
    if type(value) is int:
        return b"%d" % value
    return b"'" + _text(value).hex().encode() + b"'"


def record_bytes(position: Any, originator_id: Any, version: Any, topic: Any,
                 state: Any) -> bytes:
    """The bytes a link hashes for one stored event (see the module's docstring)."""
    ident, name, data = _text(originator_id), _text(topic), _text(state)
    return b"%b:%b:%d:%d:%d:%b%b%b" % (_number(position), _number(version), len(ident),
                                       len(name), len(data), ident, name, data)


def next_link(previous: bytes, position: Any, originator_id: Any, version: Any, topic: Any,
              state: Any) -> bytes:
    """The link of one stored event, following the link `previous`."""
    return _sha256(previous + record_bytes(position, originator_id, version, topic,
                                           state)).digest()


def link_rows(previous: bytes, rows: Iterable[ChainRow]) -> list[tuple[int, bytes]]:
    """(notification id, link) of each row, chained from `previous` in the rows' order."""
    links = []
    for row in rows:
        position, originator, version, topic, state = row
        if (type(position) is int and type(version) is int and type(topic) is str
                and type(state) is bytes):
            ident = originator.hex.encode() if type(originator) is UUID else _text(originator)
            previous = _fast_link(previous, position, ident, version, topic.encode(), state)
        else:
            previous = next_link(previous, *row)
        links.append((position, previous))
    return links


def link_events(previous: bytes, ids: Sequence[int], events: Sequence[Any]) -> list[bytes]:
    """The links of a save's stored events (the library's `StoredEvent`s), `ids` their
    notification ids in ascending order: `link_rows` without the rows, as each save runs
    it in its transaction (~4 µs an event; each id and topic is encoded once a save)."""
    links = []
    idents: dict[Any, bytes] = {}
    topics: dict[str, bytes] = {}
    for position, event in zip(ids, events):
        originator, version, state = event.originator_id, event.originator_version, event.state
        if type(version) is not int or type(state) is not bytes:
            previous = next_link(previous, position, originator, version, event.topic, state)
        else:
            ident = idents.get(originator)
            if ident is None:
                ident = idents[originator] = (originator.hex.encode() if type(originator) is UUID
                                              else _text(originator))
            topic = topics.get(event.topic) or topics.setdefault(event.topic, event.topic.encode())
            previous = _fast_link(previous, position, ident, version, topic, state)
        links.append(previous)
    return links


def _fast_link(previous: bytes, position: int, ident: bytes, version: int, topic: bytes,
               state: bytes) -> bytes:
    """`next_link` for integer position and version and byte fields: the same bytes,
    the state hashed in place rather than copied into one buffer."""
    digest = _sha256(b"%b%d:%d:%d:%d:%d:%b%b" % (previous, position, version, len(ident),
                                                 len(topic), len(state), ident, topic))
    digest.update(state)
    return digest.digest()


def backfill(read: Callable[[int], Sequence[ChainRow]], write: Callable[[list[tuple[int, bytes]]], None]
             ) -> int:
    """Chain every stored event (`read(after)` gives the rows after a notification id, in
    order; an empty batch ends) into `write`: the one-time upgrade of a store whose events
    were written before links were kept. The number of events chained."""
    chained, previous = 0, GENESIS
    for batch in _batches(read):
        links = link_rows(previous, batch)
        write(links)
        chained, previous = chained + len(links), links[-1][1]
    if chained:
        log.warning("audit chain: linked the %d events stored before links were kept "
                    "(one-time upgrade)", chained)
    return chained


def _batches(read: Callable[[int], Sequence[ChainRow]]) -> Iterator[Sequence[ChainRow]]:
    after = 0
    while batch := read(after):
        yield batch
        after = batch[-1][0]
