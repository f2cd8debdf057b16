"""The export file: the event log as JSON Lines that `events import` can replay exactly.

Each line is the public envelope (`domain.envelope.Envelope`, what `events tail
--json` prints) followed by four fields that make it replayable and checkable::

    "topic":    the stored event's topic (`domain.product:Product.Observed`)
    "state":    the stored event's state as recorded (the library's typed JSON, as text:
                the envelope's payload has lost which strings were Decimals, UUIDs, times)
    "previous": the log position of the event before it (0 for the first)
    "chain":    the audit hash chain through this event (`eventstore.chain`: over each
                event's full stored record, so it is the stored link of this event)

`read_rows` checks a file line by line and yields the stored rows to insert:
valid JSON, positions rising (`reordered`), each line following the one its
`previous` names (`gap`), the envelope equal to the one its state decodes to and
the chain linking over the exact stored record (`edited`), a known event type that
the application decodes, each stream's versions 1, 2, 3…. The first problem raises
`InvalidInput` naming the line. Readers that know only envelopes
(`Envelope.from_dict`) ignore the four fields; `audit verify-file` recomputes the
chain from them.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from uuid import UUID

from eventsourcing.persistence import StoredEvent
from eventsourcing.utils import resolve_topic

from domain.envelope import Envelope, StoredRow, from_stored
from domain.errors import InvalidInput
from eventstore.base import ImportRow
from eventstore.chain import GENESIS, ChainRow, next_link

__all__ = ["FileSummary", "ImportRow", "chain_record", "check_envelope", "export_line", "parse_line", "read_rows"]

EXTRA_FIELDS = ("topic", "state", "previous", "chain")
#: decodes a stored event with the application's mapper (raises if it cannot)
Decoder = Callable[[StoredEvent], object]
_HASH = re.compile(r"[0-9a-f]{64}")


@dataclass
class FileSummary:
    """What a checked file holds: its events, last position, chain head and sha256."""

    events: int = 0
    position: int = 0
    chain_hash: str = GENESIS.hex()
    sha256: str = ""


def export_line(row: StoredRow, envelope: Envelope, previous: int, chain: str) -> str:
    """One line of the export: the envelope, then what replays and checks it."""
    fields = envelope.to_dict()
    fields.update(topic=row[3], state=bytes(row[4]).decode("utf-8"), previous=previous,
                  chain=chain)
    return json.dumps(fields, separators=(",", ":")) + "\n"


def read_rows(path: Path, decode: Decoder, summary: FileSummary,
              label: str | None = None) -> Iterator[ImportRow]:
    """Check the export at `path` line by line, yielding each event's stored row; fills
    `summary` as it goes. Raises `InvalidInput` (naming the file as `label`, default its
    path, and the line) at the first problem."""
    name = label or str(path)
    checker = _Checker(decode)
    digest = hashlib.sha256()
    with path.open("rb") as lines:
        for number, raw in enumerate(lines, 1):
            digest.update(raw)
            try:
                yield checker.check(raw)
            except InvalidInput as error:
                raise InvalidInput(f"{name}:{number}: {error}") from None
    if checker.events == 0:
        raise InvalidInput(f"{name}: holds no events")
    summary.events, summary.position = checker.events, checker.position
    summary.chain_hash, summary.sha256 = checker.chain.hex(), digest.hexdigest()


class _Checker:
    """The state carried from line to line: last position, chain, stream versions."""

    def __init__(self, decode: Decoder) -> None:
        self.decode = decode
        self.events = 0
        self.position = 0
        self.chain = GENESIS
        self.versions: dict[UUID, int] = {}

    def check(self, raw: bytes) -> ImportRow:
        line = parse_line(raw)
        position, previous = line["position"], line["previous"]
        if position <= self.position:
            raise InvalidInput(f"position {position} comes after position {self.position}: "
                               "the lines are reordered or repeated")
        if previous != self.position:
            raise InvalidInput(f"position {position} follows position {previous} in the log, "
                               f"but the line before is position {self.position}: a gap "
                               "(events are missing or out of order here; a --stream export "
                               "cannot be imported)")
        row = self._stored_row(line)
        check_envelope(line, row)
        chain = next_link(self.chain, *chain_record(line))
        if chain.hex() != line["chain"]:
            raise InvalidInput(f"position {position} was edited: the audit chain breaks here")
        self._check_version(row)
        self.events, self.position, self.chain = self.events + 1, position, chain
        return row

    def _stored_row(self, line: dict[str, Any]) -> ImportRow:
        topic = line["topic"]
        _known_event_class(topic)
        stream = UUID(line["stream_id"])
        row: ImportRow = (line["position"], stream, line["version"], topic,
                          line["state"].encode("utf-8"))
        try:
            self.decode(StoredEvent(stream, line["version"], topic, row[4]))
        except Exception as error:  # noqa: BLE001 - any failure to decode refuses the file
            raise InvalidInput(f"position {line['position']} ({line['event_type']}) "
                               f"does not decode: {error}") from None
        return row

    def _check_version(self, row: ImportRow) -> None:
        position, stream, version = row[0], row[1], row[2]
        expected = self.versions.get(stream, 0) + 1
        if version != expected:
            raise InvalidInput(f"position {position}: stream {stream} has version {version} "
                               f"where {expected} is due")
        self.versions[stream] = version


def check_envelope(line: dict[str, Any], row: ImportRow) -> None:
    """`InvalidInput` unless the line's envelope is the one its stored record decodes to."""
    if _envelope(row).to_dict() != Envelope.from_dict(line).to_dict():
        raise InvalidInput(f"position {row[0]} was edited: its envelope is not what "
                           "its stored state says")


def chain_record(line: dict[str, Any]) -> ChainRow:
    """The stored record an export line stands for, as the audit chain hashes it."""
    return (line["position"], UUID(line["stream_id"]).hex, line["version"], line["topic"],
            line["state"].encode("utf-8"))


def parse_line(raw: bytes) -> dict[str, Any]:
    """One export line's fields, checked for presence and type (`InvalidInput` if not)."""
    try:
        line = json.loads(raw)
    except ValueError as error:
        raise InvalidInput(f"not valid JSON ({error})") from None
    if not isinstance(line, dict):
        raise InvalidInput("not a JSON object")
    missing = [f for f in (*Envelope.__dataclass_fields__, *EXTRA_FIELDS)
               if f not in line and f != "ledger_id"]
    if missing:
        raise InvalidInput(f"has no {', '.join(missing)} (not written by `events export`, "
                           "or by one older than `events import`: export again)")
    for name in ("position", "previous", "version"):
        if type(line[name]) is not int or line[name] < 0:
            raise InvalidInput(f"{name} is not a non-negative integer")
    for name in ("topic", "state", "stream_id", "event_type"):
        if not isinstance(line[name], str):
            raise InvalidInput(f"{name} is not a string")
    if not isinstance(line["chain"], str) or not _HASH.fullmatch(line["chain"]):
        raise InvalidInput("chain is not a chain hash (64 hex digits)")
    try:
        UUID(line["stream_id"])
    except ValueError:
        raise InvalidInput(f"stream_id {line['stream_id']!r} is not a UUID") from None
    return line


def _known_event_class(topic: str) -> None:
    """Only the ledger's own event classes: resolving a topic imports its module."""
    from eventsourcing.domain import CanMutateAggregate

    module = topic.partition(":")[0]
    found: Any = None
    if module.startswith("domain."):
        try:
            found = resolve_topic(topic)
        except Exception:  # noqa: BLE001 - an unknown module or class
            found = None
    if not (isinstance(found, type) and issubclass(found, CanMutateAggregate)):
        raise InvalidInput(f"unknown event type {topic!r}")


def _envelope(row: ImportRow) -> Envelope:
    try:
        return from_stored(*row)
    except (ValueError, KeyError, TypeError, AttributeError) as error:
        raise InvalidInput(f"position {row[0]} has a broken state ({error})") from None
