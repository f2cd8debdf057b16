"""Rendering an aggregate's event history for people: one readable line per event."""

from __future__ import annotations

import argparse
from datetime import UTC, datetime
from typing import Any

from domain.envelope import Envelope
from ledger.bootstrap import Ledger
from ledger.cli.errors import CommandError
from ledger.cli.output import print_table
from runtime.history import known_at, stream_history

#: payload fields not worth a column in a human history
QUIET = {"at", "observed_at", "registered_at", "retry_policy", "url_norm", "attributes",
         "offers", "outcome", "new_products", "content_hash"}


def add_show_parser(actions: Any, id_arg: str, help: str, handler: Any) -> None:
    """The `show ID [--as-of T] [--json]` sub-command shared by jobs and products."""
    show = actions.add_parser("show", help=help)
    show.add_argument(id_arg)
    show.add_argument("--as-of", help="what the ledger knew at this time (ISO 8601)")
    show.add_argument("--json", action="store_true")
    shown = show.add_mutually_exclusive_group()
    shown.add_argument("--last", type=_count, default=SHOWN_EVENTS, metavar="N",
                       help=f"show its newest N events (default {SHOWN_EVENTS})")
    shown.add_argument("--all", action="store_true", help="show every event of its history")
    show.set_defaults(handler=handler)


#: the events `show` lists by default: a recurring job gains ~3 a crawl (~6,500 a year),
#: and reading and printing them all would grow with its age
SHOWN_EVENTS = 50


def _count(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"bad count {text!r}: use a whole number, at least 1")
    return int(text)


def stream_as_of(ledger: Ledger, aggregate: Any, as_of: str | None,
                 last: int | None = None) -> tuple[Any, list[Envelope]]:
    """The aggregate and the newest `last` events of its history (None: all) as the
    ledger knew them at `as_of` (recorded time)."""
    if as_of is None:
        return aggregate, stream_history(ledger, aggregate.id, last=last)
    found = known_at(ledger, aggregate, parse_as_of(as_of))
    if found is None:
        raise CommandError(f"{aggregate.id} was not yet recorded at {as_of}")
    known, history = found
    return known, history if last is None else history[-last:]


def history_title(aggregate: Any, history: list[Envelope]) -> str:
    """"history", or how much of it is shown when not all of it is."""
    if not history or history[0].version == 1:
        return "history"
    return (f"history (newest {len(history)} of {history[-1].version} events; "
            "--all shows every one)")


def parse_as_of(text: str) -> datetime:
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise CommandError(f"bad --as-of {text!r}: use ISO 8601, e.g. 2026-01-05T12:00:00Z") from None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def describe(env: Envelope) -> str:
    """The event's details, after who recorded it and through which surface, if known."""
    p = env.payload
    details = _details(env)
    if p.get("actor"):
        by = f"by {p['actor']}" + (f" via {p['surface']}" if p.get("surface") else "")
        return f"{by}: {details}" if details else by
    return details


def _details(env: Envelope) -> str:
    p = env.payload
    kind = env.event_type.split(".", 1)[1]
    if kind == "Succeeded":
        o = p["outcome"]
        no_store = o.get("no_store")
        return (f"HTTP {o['http_status']}, {o['items']} items, {o['pages']} page(s), "
                f"{o['bytes']} bytes, {o['duration']:.2f}s, changed={o['changed']}, "
                f"{o['extractor_version']}, {len(p['new_products'])} new products"
                + (f"; {no_store['links']} link(s) to origins with no registered store, not"
                   f" crawled ({', '.join(no_store['origins'])})" if no_store else ""))
    if kind == "Observed":
        offers = "; ".join(offer_line(o) for o in p["offers"]) or "no offers"
        return f"{p['availability']}: {offers}"
    if kind == "PriceChanged":
        return (f"{p['option']}: {p['old']} -> {p['new']} {p['currency'] or ''}"
                + (f" (special {p['old_special']} -> {p['new_special']})"
                   if p["old_special"] != p["new_special"] else ""))
    return ", ".join(f"{k}={_short(v)}" for k, v in p.items()
                     if k not in QUIET and k not in _ORIGIN and v is not None)


#: who/where fields, shown first as "by … via …"
_ORIGIN = frozenset({"actor", "surface"})


def offer_line(offer: dict[str, Any]) -> str:
    """An offer as people read it: its option, its pricing type when it is not the
    regular one (a menu's recreational and medical prices), its price or "no price"."""
    kind = offer.get("pricing_type") or "regular"
    label = offer["option"] + ("" if kind == "regular" else f" [{kind}]")
    if offer.get("price") is None:
        return f"{label}: no price"
    special = f" (special {offer['special_price']})" if offer.get("special_price") else ""
    return f"{label}: {offer['price']} {offer.get('currency') or ''}".rstrip() + special


def _short(value: Any) -> str:
    text = str(value)
    return text if len(text) <= 60 else text[:57] + "..."


def print_history(title: str, envelopes: list[Envelope]) -> None:
    print_table(title, ["#", "when", "event", "details"],
                ([e.version, e.occurred_at[:19].replace("T", " "),
                  e.event_type.split(".", 1)[1], describe(e)] for e in envelopes))
