"""Events as the dashboard's timelines show them, and the events page's filtered reads.

A row carries the event's type, time, who asked (actor, surface), a reason or a
summary (a price change reads "one: $10.00 → $8.00"), its lineage, and a link and a
name for its stream (the product's name, the job's URL). The events page reads the
log backwards from a position in windows, keeping the events whose type contains the
filter text or whose stream is the one asked for, so it pages through the whole log
at a bounded cost per page.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from api.formatting import money
from domain.envelope import Envelope
from projections.queries import ReadModel
from projections.source import NotificationLogSource

__all__ = ["EventPage", "event_page", "stream_links", "timeline_row"]

#: events read per window when filtering, and at most this many windows per page
WINDOW, WINDOWS = 1000, 5

_LINEAGE = ("job_id", "lease_id", "worker", "parent_job", "child_job", "attempt",
            "content_hash")


def timeline_row(env: Envelope, links: dict[str, tuple[str, str]] | None = None
                 ) -> dict[str, Any]:
    """An event as a timeline shows it: type, time, reason and lineage first."""
    payload = dict(env.payload)
    reason = payload.get("reason") or payload.get("error_kind") or payload.get("message")
    outcome = payload.get("outcome")
    if isinstance(outcome, dict) and not reason:
        reason = outcome.get("error_kind") or outcome.get("message") or _no_store(outcome)
    if env.event_type.endswith(".PriceChanged"):
        reason = price_change(payload)
    lineage = {k: payload[k] for k in _LINEAGE if payload.get(k)}
    href, name = (links or {}).get(env.stream_id, ("", ""))
    return {"type": env.event_type, "at": env.occurred_at, "version": env.version,
            "position": env.position, "stream": env.stream_id, "reason": reason,
            "actor": payload.get("actor"), "surface": payload.get("surface"),
            "lineage": lineage, "payload": payload, "href": href, "name": name}


def _no_store(outcome: dict[str, Any]) -> str | None:
    """A feed result's links to origins with no registered store (not crawled)."""
    found = outcome.get("no_store")
    if not isinstance(found, dict):
        return None
    return (f"{found.get('links')} link(s) to origins with no registered store, not crawled: "
            + ", ".join(str(o) for o in found.get("origins") or ()))


def price_change(payload: dict[str, Any]) -> str:
    """ "one (rec): $10.00 → $8.00" — the price paid before and after (a special when
    there is one), with the regular price when only the special moved."""
    currency = payload.get("currency")
    before = payload.get("old_special") or payload.get("old")
    after = payload.get("new_special") or payload.get("new")
    option = str(payload.get("option") or "")
    kind = payload.get("pricing_type")
    label = f"{option} ({kind})" if kind and kind != "regular" else option
    text = f"{money(before, currency)} → {money(after, currency)}"
    if payload.get("new_special"):
        text += f" special (regular {money(payload.get('new'), currency)})"
    return f"{label}: {text}" if label else text


def stream_links(read: ReadModel, envelopes: list[Envelope]) -> dict[str, tuple[str, str]]:
    """Per stream of a product or a job: its page and its name (product name, job URL)."""
    pages = {"Product": "/products", "CrawlJob": "/jobs"}
    linked = {env.stream_id: pages[env.stream_type] for env in envelopes
              if env.stream_type in pages}
    labels = read.labels([s for s, page in linked.items() if page == "/products"],
                         [s for s, page in linked.items() if page == "/jobs"])
    return {stream: (f"{page}/{stream}", labels.get(stream) or stream[:8])
            for stream, page in linked.items()}


@dataclass(frozen=True)
class EventPage:
    events: list[Envelope]  # newest first
    older: int | None  # the `before` of the next (older) page, None at the log's start


def event_page(source: NotificationLogSource, before: int, type_text: str = "",
               stream: str = "", limit: int = 100) -> EventPage:
    """Up to `limit` events at positions below `before`, newest first, whose type
    contains `type_text` (any case) and whose stream id starts with `stream`; the rows
    are matched before they are decoded, so a scan costs little."""
    wanted, prefix = type_text.strip().lower(), stream.strip().lower()

    def keep(stream_id: str, event_type: str) -> bool:
        return wanted in event_type.lower() and stream_id.lower().startswith(prefix)

    found: list[Envelope] = []
    top = before
    window = limit if not (wanted or prefix) else WINDOW
    for _ in range(WINDOWS):
        if top <= 1 or len(found) >= limit:
            break
        start = max(0, top - 1 - window)
        for env in reversed(source.read_where(start, top - 1 - start, keep)):
            found.append(env)
            if len(found) == limit:
                return EventPage(found, env.position if env.position > 1 else None)
        top = start + 1
    return EventPage(found, top if top > 1 else None)
