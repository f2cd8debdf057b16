"""A product's unchanged sightings (`domain.sightings`) as of a time, from its own
events and the crawls of the jobs that saw it.

An unchanged sighting records no event of the product: it is in its crawl's
`Sightings.Recorded`. The product's own events still tell where such sightings can
be. After an `Observed` by job J, until the product's next event that observes or
changes it (another `Observed`, a price, detail or stock change, a miss), every
successful crawl of J saw it unchanged, provided J is a catalog job: a catalog crawl
either lists the product (unchanged: a sighting; changed: an event) or misses it (a
`Missed` event, or, when it is out of stock, a `WentOutOfStock` before), and a
sighting by another job is recorded per product. So the count of such sightings and
the time of the last one come from J's `Succeeded` events between those two product
events (by log position), without reading the crawls' columns.
"""

from __future__ import annotations

from datetime import datetime
from uuid import UUID

from domain.envelope import Envelope
from domain.errors import NotFound
from domain.timeutil import parse_iso
from runtime.history import stream_history
from runtime.ledger import Ledger

__all__ = ["unchanged_sightings"]

#: product events after which the next sighting is recorded per product (`BackInStock`
#: and `StockKnown` only follow an `Observed` of the same crawl, and leave it in stock
#: and its stock known: they end nothing)
_ENDS = frozenset({"Observed", "Missed", "WentOutOfStock", "StockUnknown", "PriceChanged",
                   "DetailsChanged"})
Span = tuple[Envelope, Envelope | None]


def unchanged_sightings(ledger: Ledger, history: list[Envelope], at: datetime | None
                        ) -> tuple[int, datetime | None]:
    """How many unchanged sightings the product whose events (recorded by `at`, None:
    all) are `history` had by `at`, and the time of the last one (None: none)."""
    count, last = 0, None
    crawls: dict[str, list[Envelope]] = {}
    spans = _spans(history)
    for start, end in spans:
        job = str(start.payload["job_id"])
        if job not in crawls:
            first = min(s.position for s, _ in spans if s.payload["job_id"] == job)
            crawls[job] = _catalog_successes(ledger, job, at, first)
        seen = _between(crawls[job], start, end, job)
        count += len(seen)
        if seen:
            last = parse_iso(seen[-1].occurred_at)
    return count, last


def _spans(history: list[Envelope]) -> list[Span]:
    """Each `Observed` that left the product in stock (after its crawl's other events)
    and the product event that ends its run of unchanged sightings (None: still
    running). An out-of-stock product's sightings are per product, and a crawl that
    does not list it records nothing for it: no run starts there."""
    spans: list[Span] = []
    start: Envelope | None = None
    in_stock = ok = True
    for env in history:
        kind = env.event_type.rsplit(".", 1)[-1]
        if kind in _ENDS and start is not None:
            if ok:
                spans.append((start, env))
            start = None
        if kind == "WentOutOfStock":
            in_stock = False
        elif kind == "BackInStock":
            in_stock = True
        if kind == "Observed":
            start, ok = env, in_stock
        elif start is not None and env.occurred_at == start.occurred_at:
            ok = in_stock  # its crawl's own stock events
    if start is not None and ok:
        spans.append((start, None))
    return spans


def _between(successes: list[Envelope], start: Envelope, end: Envelope | None,
             job: str) -> list[Envelope]:
    """The job's successful crawls after `start` and before `end`, less the crawl that
    recorded `end` when it is the job's (a crawl that saw it changed or missed it)."""
    inside = [e for e in successes
              if e.position > start.position and (end is None or e.position < end.position)]
    if (end is not None and inside and end.payload.get("job_id") == job
            and inside[-1].occurred_at == end.occurred_at):
        inside.pop()
    return inside


def _catalog_successes(ledger: Ledger, job: str, at: datetime | None,
                       after: int) -> list[Envelope]:
    """The job's `Succeeded` events after position `after` recorded by `at` (only the
    job's events since the product's first run of sightings are read, not its whole
    history); none for a job that is not a catalog job (only catalog crawls record
    unchanged sightings)."""
    try:
        if ledger.app.get_job(job).kind != "catalog":  # from its snapshot: a bounded read
            return []
    except NotFound:
        return []
    return [e for e in stream_history(ledger, UUID(job), after)
            if e.event_type == "CrawlJob.Succeeded"
            and (at is None or parse_iso(e.recorded_at) <= at)]  # type: ignore[operator]
