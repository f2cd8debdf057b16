"""What a crawl's outcome counts for extraction health (`domain.outcome.extraction_counts`)."""

from __future__ import annotations

from decimal import Decimal

from domain.outcome import extraction_counts, outcome_payload
from domain.values import CrawlSuccess, Observation, Offer


def _obs(pid: str, price: str | None = None, special: str | None = None,
         source: str | None = None) -> Observation:
    return Observation(pid, pid, offers=(Offer("one", price and Decimal(price), "EUR",
                                                special_price=special and Decimal(special)),),
                       attributes={"source.price": source} if source else {})


def test_counts_products_once_and_sorts_missing_from_low_confidence() -> None:
    counts = extraction_counts([
        _obs("a"), _obs("a", "1.00"),  # the first of a product's observations is the one kept
        _obs("b", special="2.00"),  # a sale price alone is a price
        _obs("c", "3.00", source="visible"),  # visible text alone: low confidence
        _obs("d", "4.00", source="visible sale price beside the structured one"),
        _obs("e", source="visible"),  # no price at all: missing, not low-confidence
        Observation("f", "f"),  # no offer
    ])
    assert counts == {"products": 6, "no_price": 3, "low_confidence": 1}


def test_the_outcome_carries_counts_only_when_products_were_seen() -> None:
    empty = CrawlSuccess(200, "https://s.example/", "x", "x/1", "h")
    assert "extraction" not in outcome_payload(empty)  # payloads as they were before
    seen = CrawlSuccess(200, "https://s.example/", "x", "x/1", "h", observations=(_obs("a"),))
    assert outcome_payload(seen)["extraction"] == {"products": 1, "no_price": 1,
                                                   "low_confidence": 0}
