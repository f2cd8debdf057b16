"""An independent model of the Product events the ledger must hold.

Written from the design's rules, not from `domain.product`:

- each successful crawl that sees a product records one `Observed`; the first
  one is preceded by `Discovered`;
- a price change is a change of (regular price, special price) of one option
  between two consecutive successful observations of the product;
- a product the catalog listed before and that is absent from a successful
  crawl of that catalog is missed; the 3rd consecutive miss makes it go out of
  stock ("misses"); a failed crawl never counts; while out of stock there is
  nothing to miss;
- the store saying "out of stock" makes it go out at once ("feed_says"), and so
  does its product page answering 404/410 ("gone"); being seen again, not
  sold out, brings it back in stock.

Inputs are the simulator's ground truth per epoch and *which* crawls succeeded,
in the order they were recorded (the jobs' `Succeeded` events, mapped to
epochs by the simulated clock; a catalog and a product page of the same
product in one epoch affect each other in that order). The output and the
ledger's recorded events are both multisets of
`(store key, provider id, epoch, event type, detail)`.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from domain.envelope import Envelope
from domain.sightings import expand

MISSES_FOR_OUT = 3
PRODUCT_EVENTS = ("Discovered", "Observed", "PriceChanged", "Missed", "WentOutOfStock",
                  "BackInStock")
Key = tuple[str, str, int, str, Any]
Prices = tuple[Decimal, Decimal | None]


@dataclass(frozen=True)
class Run:
    """One successful crawl of a product-bearing job (catalog or product page)."""

    job_id: str
    kind: str
    url: str
    store: str
    epoch: int
    gone: bool = False


@dataclass
class Tracked:
    """What the model knows of one product."""

    #: (option, pricing type) -> prices
    offers: dict[tuple[str, str], Prices] = field(default_factory=dict)
    in_stock: bool = True
    misses: int = 0


def dec(value: Any) -> Decimal | None:
    return None if value is None else Decimal(str(value))


def successful_runs(envelopes: Iterable[Envelope], store_keys: Mapping[str, str],
                    epoch_of: Callable[[str], int]) -> list[Run]:
    jobs: dict[str, dict[str, Any]] = {}
    runs = []
    for env in envelopes:
        if env.event_type == "CrawlJob.Scheduled":
            jobs[env.stream_id] = env.payload
        elif env.event_type == "CrawlJob.Succeeded":
            job = jobs[env.stream_id]
            if job["kind"] in ("catalog", "product_page"):
                runs.append(Run(env.stream_id, job["kind"], job["url"],
                                store_keys[job["store_id"]], epoch_of(env.payload["at"]),
                                bool(env.payload["outcome"].get("gone"))))
    return runs


class TruthModel:
    """Replays successful runs over the ground truth; collects the expected events."""

    def __init__(self, truth_at: Callable[[int], Mapping[str, Any]]) -> None:
        self.truth_at = truth_at
        self.products: dict[tuple[str, str], Tracked] = {}
        self.catalog_known: dict[str, set[str]] = defaultdict(set)
        self.page_product: dict[str, str] = {}
        self.events: Counter[Key] = Counter()

    def replay(self, runs: Iterable[Run]) -> Counter[Key]:
        """Apply the runs one by one, in the order the ledger recorded them."""
        for run in runs:
            stores = self.truth_at(run.epoch)["stores"]
            if run.gone:
                self._gone(run)
                continue
            listed = stores[run.store]["products"]
            medical = stores[run.store]["platform"] == "dispensary"
            for pid in self._seen_by(run, listed):
                self._observe(run.store, pid, run.epoch, listed[pid], medical)
                self.page_product.setdefault(run.job_id, pid)
            if run.kind == "catalog":
                for pid in sorted(self.catalog_known[run.job_id] - set(listed)):
                    self._miss(run.store, pid, run.epoch)
                self.catalog_known[run.job_id] |= set(listed)
        return self.events

    def _gone(self, run: Run) -> None:
        pid = self.page_product.get(run.job_id)
        assert pid is not None, f"page {run.url} gone at epoch {run.epoch} but never seen"
        assert pid not in self.truth_at(run.epoch)["stores"][run.store]["products"]
        tracked = self.products[(run.store, pid)]
        if tracked.in_stock:
            self._emit(run.store, pid, run.epoch, "WentOutOfStock", "gone")
            tracked.in_stock = False

    @staticmethod
    def _seen_by(run: Run, listed: Mapping[str, Any]) -> list[str]:
        if run.kind == "catalog":
            return list(listed)
        found = [pid for pid, p in listed.items() if p["url"] == run.url]
        assert found, f"product page {run.url} succeeded at epoch {run.epoch} but is not listed"
        return found

    def _emit(self, store: str, pid: str, epoch: int, kind: str, detail: Any = None) -> None:
        self.events[(store, pid, epoch, kind, detail)] += 1

    def _observe(self, store: str, pid: str, epoch: int, truth: Mapping[str, Any],
                 medical: bool) -> None:
        tracked = self.products.get((store, pid))
        if tracked is None:
            tracked = self.products[(store, pid)] = Tracked()
            self._emit(store, pid, epoch, "Discovered")
        offers: dict[tuple[str, str], Prices] = {
            (o["option"], "rec"): (Decimal(o["price"]), dec(o["special_price"]))
            for o in truth["offers"]}
        if medical:  # the dispensary menu prices the medical menu at the regular price
            offers |= {(o["option"], "medical"): (Decimal(o["price"]), None)
                       for o in truth["offers"]}
        for (option, kind), new in offers.items():
            old = tracked.offers.get((option, kind))
            if old is not None and old != new:
                self._emit(store, pid, epoch, "PriceChanged", (option, old, new))
        self._emit(store, pid, epoch, "Observed")
        tracked.offers, tracked.misses = offers, 0
        sold_out = truth["availability"] == "out_of_stock"
        if sold_out and tracked.in_stock:
            self._emit(store, pid, epoch, "WentOutOfStock", "feed_says")
            tracked.in_stock = False
        elif not sold_out and not tracked.in_stock:
            self._emit(store, pid, epoch, "BackInStock")
            tracked.in_stock = True

    def _miss(self, store: str, pid: str, epoch: int) -> None:
        tracked = self.products[(store, pid)]
        if not tracked.in_stock:
            return
        tracked.misses += 1
        self._emit(store, pid, epoch, "Missed", tracked.misses)
        if tracked.misses >= MISSES_FOR_OUT:
            self._emit(store, pid, epoch, "WentOutOfStock", "misses")
            tracked.in_stock = False


def recorded_events(envelopes: Iterable[Envelope], store_keys: Mapping[str, str],
                    epoch_of: Callable[[str], int]) -> Counter[Key]:
    """The ledger's Product events in the model's terms (an unchanged sighting in a
    crawl's `Sightings` is an `Observed`)."""
    names: dict[str, tuple[str, str]] = {}
    events: Counter[Key] = Counter()
    for env in expand(envelopes):
        kind = env.event_type.removeprefix("Product.").replace("Sighted", "Observed")
        if env.stream_type != "Product" or kind not in PRODUCT_EVENTS:
            continue
        p = env.payload
        if kind == "Discovered":
            names[env.stream_id] = (store_keys[p["store_id"]], p["provider_product_id"])
        store, pid = names[env.stream_id]
        epoch = epoch_of(p.get("at") or p["observed_at"])
        events[(store, pid, epoch, kind, _detail(kind, p))] += 1
    return events


def _detail(kind: str, p: Mapping[str, Any]) -> Any:
    if kind == "PriceChanged":
        return (p["option"], (dec(p["old"]), dec(p["old_special"])),
                (dec(p["new"]), dec(p["new_special"])))
    if kind == "Missed":
        return p["consecutive_misses"]
    if kind == "WentOutOfStock":
        return p["reason"]
    return None


def describe_difference(expected: Counter[Key], recorded: Counter[Key]) -> str:
    missing = sorted((expected - recorded).elements(), key=repr)
    extra = sorted((recorded - expected).elements(), key=repr)
    lines = [f"expected but not recorded ({len(missing)}):", *map(repr, missing[:40]),
             f"recorded but not expected ({len(extra)}):", *map(repr, extra[:40])]
    return "\n".join(lines)
