"""Ids as people type them: a unique prefix of a job, product or store id (the 8
characters the tables and the dashboard show), and a store's name when it is unique."""

from __future__ import annotations

import re
import uuid

from ledger.cli.errors import CommandError
from runtime.ledger import Ledger


class AmbiguousId(CommandError):
    """A prefix that starts more than one id."""


#: the shortest prefix taken (shorter ones match too much to be meant)
MIN_PREFIX = 4


def resolve_id(ledger: Ledger, kind: str, text: str) -> str:
    """The full id `text` names: itself when it is one, else the one id it starts."""
    typed = text.strip().lower()
    try:
        return str(uuid.UUID(typed))
    except ValueError:
        pass
    if len(typed) < MIN_PREFIX or not re.fullmatch(r"[0-9a-f-]+", typed):
        raise CommandError(f"unknown {kind} id {text!r}: give the id, or at least its first "
                           f"{MIN_PREFIX} characters")
    ledger.catch_up()
    found = ledger.read.ids_starting(kind, typed, limit=3)
    if not found:
        raise CommandError(f"unknown {kind} id {text!r}")
    if len(found) > 1:
        raise AmbiguousId(f"{kind} id prefix {text!r} is ambiguous: it starts "
                           f"{', '.join(found[:2])}{' and more' if len(found) > 2 else ''}")
    return found[0]


def resolve_store(ledger: Ledger, text: str) -> str:
    """A store's id from its id, its name (when no other store has it) or an id prefix."""
    ledger.catch_up()
    named = ledger.read.stores_named(text)
    if len(named) > 1:
        raise CommandError(f"{len(named)} stores are named {text!r}: give the store's id "
                           f"({', '.join(n[:8] for n in named)})")
    if named:
        return named[0]
    try:
        found = resolve_id(ledger, "store", text)
    except AmbiguousId:
        raise
    except CommandError:
        found = None
    if found is None or not ledger.read.ids_starting("store", found, limit=1):
        raise CommandError(f"unknown store id or name {text!r}")
    return found
