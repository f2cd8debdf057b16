"""Re-extraction without recrawling: the current extractor over archived raw pages.

Every successful crawl recorded its pages' raw reference (`<data dir>/raw/`, sha256)
and each product it saw (`Product.Observed` with the page's content hash and the
extractor version). `plan` reads the log, runs the current extractor over each
archived page (optionally of one store, crawled since a time) and lists the products
whose price, currency or stock would read differently — including products the
page holds that the old extractor did not find. `apply` records them
(`Product.Reextracted`, via `CrawlLedger.record_reextraction`); a page already
re-extracted by this extractor version is skipped, so a second run records nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from domain import ids
from domain.recording import PRODUCT_KINDS
from domain.sightings import SIGHTED, expand
from domain.timeutil import parse_iso
from domain.values import Observation
from runtime.ledger import Ledger
from workers.archive.raw_archive import ArchiveError, RawArchive
from workers.extraction.adapters.base import ExtractionError, Page
from workers.extraction.extract import extract_page
from workers.fetching.fetch import decode_body

__all__ = ["Difference", "apply", "plan"]

@dataclass(frozen=True)
class Difference:
    """One product on one archived page that the current extractor reads differently."""

    store_id: str
    job_id: str
    product_id: str
    name: str
    content_hash: str
    raw_ref: str | None
    observed_at: datetime
    old: str
    new: str
    extractor_version: str
    observation: Observation = field(repr=False)


@dataclass
class _Log:
    jobs: dict[str, tuple[str | None, str]] = field(default_factory=dict)  # job -> store, kind
    runs: list[dict[str, Any]] = field(default_factory=list)
    #: (product id, content hash) -> the last reading recorded for that page
    readings: dict[tuple[str, str], str] = field(default_factory=dict)
    #: "content hash:extractor version" already re-extracted, per product
    done: set[tuple[str, str]] = field(default_factory=set)


def plan(ledger: Ledger, archive: RawArchive, store: str | None = None,
         since: datetime | None = None) -> Iterator[Difference]:
    """The differences, page by page, in log order (nothing is recorded)."""
    log = _read_log(ledger)
    for run in log.runs:
        store_id, kind = log.jobs.get(run["job_id"], (None, ""))
        if store_id is None or kind not in PRODUCT_KINDS or (store and store_id != store):
            continue
        if since is not None and run["at"] < since:
            continue
        found = _extract(archive, run)
        if found is None:
            continue
        version, observations = found
        for obs in observations:
            product_id = str(ids.product_id(store_id, obs.provider_product_id))
            if (product_id, f"{run['content_hash']}:{version}") in log.done:
                continue
            new = reading(obs)
            old = log.readings.get((product_id, run["content_hash"]), "not found")
            if new != old:
                yield Difference(store_id, run["job_id"], product_id, obs.name,
                                 run["content_hash"], run["raw_ref"], run["at"], old, new,
                                 version, obs)


def apply(ledger: Ledger, differences: Iterator[Difference],
          now: Callable[[], datetime]) -> list[Difference]:
    """Record each difference (`Product.Reextracted`); returns those recorded."""
    recorded = []
    for diff in differences:
        if ledger.app.record_reextraction(diff.store_id, diff.observation, diff.job_id,
                                          diff.content_hash, diff.raw_ref,
                                          diff.extractor_version, diff.observed_at, now()):
            recorded.append(diff)
    return recorded


def reading(obs: Observation | None = None, offers: list[dict[str, Any]] | None = None,
            availability: str | None = None) -> str:
    """What a sighting says, comparably: "option: price[/special] CUR; availability"."""
    if obs is not None:
        offers = [o.to_payload() for o in obs.offers]
        availability = obs.availability
    parts = []
    for offer in offers or []:
        price = _amount(offer.get("price"))
        special = offer.get("special_price")
        paid = f"{price}/{_amount(special)}" if special is not None else price
        parts.append(f"{offer.get('option')}: {paid} {offer.get('currency') or '?'}")
    return "; ".join(sorted(parts)) + f"; {availability or 'unknown'}"


def _amount(value: Any) -> str:
    if value is None:
        return "-"
    text = format(value, "f") if not isinstance(value, str) else value
    return text.rstrip("0").rstrip(".") if "." in text else text


def _read_log(ledger: Ledger) -> _Log:
    log = _Log()
    after, batch = 0, 5000
    while True:
        envelopes = ledger.source.read(after, batch)
        for env in expand(envelopes):  # a crawl's unchanged sightings: per product
            payload, stream = env.payload, str(env.stream_id)
            if env.event_type == "CrawlJob.Scheduled":
                log.jobs[stream] = (payload.get("store_id"), payload.get("kind", ""))
            elif env.event_type == "CrawlJob.Succeeded":
                outcome = payload.get("outcome") or {}
                if outcome.get("raw_ref") and not outcome.get("gone"):
                    log.runs.append({"job_id": stream, "raw_ref": outcome["raw_ref"],
                                     "content_hash": outcome.get("content_hash"),
                                     "url": outcome.get("final_url") or "",
                                     "at": parse_iso(payload["at"])})
            elif env.event_type in ("Product.Observed", SIGHTED):
                log.readings[(stream, payload["content_hash"])] = reading(
                    offers=payload["offers"], availability=payload["availability"])
            elif env.event_type == "Product.Reextracted":
                key = f"{payload['content_hash']}:{payload['extractor_version']}"
                log.done.add((stream, key))
                log.readings[(stream, payload["content_hash"])] = reading(
                    offers=payload["offers"], availability=payload["availability"])
        if len(envelopes) < batch:
            return log
        after = envelopes[-1].position


def _extract(archive: RawArchive, run: dict[str, Any]
             ) -> tuple[str, tuple[Observation, ...]] | None:
    """(extractor version, observations) of an archived crawl; None when unreadable."""
    observations: dict[str, Observation] = {}
    version = ""
    try:
        refs = archive.page_refs(run["raw_ref"])
        for ref in refs:
            body = archive.get(ref)
            page = Page(url=run["url"], text=decode_body(body, ""), body=body)
            adapter, extraction = extract_page(page)
            version = adapter.version
            for obs in extraction.observations:
                observations.setdefault(obs.provider_product_id, obs)
    except (ArchiveError, ExtractionError):
        return None
    return version, tuple(observations.values())
