"""Every price an HTML product page gives for its main product, with its evidence, and
the ranking that picks the one a buyer pays now (`crawl-ledger extract --explain`).

Candidates come from every source: each structured offer (JSON-LD, microdata, RDFa, the
platform's own JSON, OpenGraph), its sale and regular price, and each amount the page
visibly shows (`workers.extraction.adapters.visible`), with what marks it: a price class or label,
the product's own price marks (buy box), a currency, its nearness to the heading and to
the buy control, struck through or labelled list/MRP/UVP/RRP/was, before tax, a used or
another seller's offer. Unit prices, instalments, shipping costs and converted amounts are
no candidates at all. All amounts went through the same parsing (`workers.extraction.prices`).

The ranking, first rule that applies:

1. auction: a current bid shown beside the bid button, above the structured starting
   bid, is the price (`merge._with_visible_bid`);
2. sale shown in text only: a structured price the page shows struck through or labelled
   as the list price beside a lower visible price is the regular price, and the lower
   one is paid (`merge._with_visible_sale`);
3. structured offer: the shop's own data about this product, in the order JSON-LD,
   microdata, RDFa, the platform's JSON, OpenGraph; its sale price when lower; with
   several offers, the one whose price the page shows as its price comes first; a price
   range (an AggregateOffer from `lowPrice` to `highPrice`) gives way to the price the
   page shows inside it (`merge._within_range`);
4. visible: the candidate with the most points (`Candidate.score`: +4 marked or
   labelled as a price, +2 marked as the product's own price, +2 shows a currency,
   +3/+2/+1 within 40/120/400 elements of the heading and of the buy control, -1/-2
   above the heading, -4 discount or shipping words beside it, -4 a used or another
   seller's offer when the buy box shows a price of its own, -3 one of three or more
   different amounts set alike: a listing's or recommendations' cards); ties go to the one
   earlier on the page; a struck-through or old-labelled candidate is never paid, and
   the nearest higher one beside the winner is its regular price.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from domain.values import Observation
from workers.extraction.adapters.visible import Candidate, Visible

__all__ = ["PriceCandidate", "collect", "why"]

#: `merge`'s price sources that are ranking rules of their own (the rest are rule 3/4)
_RULES = {
    "visible current bid beside the bid button":
        "rule 1 (auction): the current bid beside the bid button beats the starting bid",
    "visible sale price beside the structured one":
        "rule 2 (sale shown in text): the structured price is shown struck through or as "
        "the list price beside this lower one",
    "visible price inside the structured price range":
        "rule 3 (structured offer): the structured offer is a price range; the page shows "
        "this price inside it for the variant on display",
    "visible":
        "rule 4 (no structured price): the visible candidate with the most points",
}


@dataclass(frozen=True)
class PriceCandidate:
    """One price the page gives, where it came from and what marks it."""

    amount: Decimal
    currency: str | None
    source: str
    evidence: tuple[str, ...] = ()
    #: a regular (list, former, struck-through) price rather than one paid now
    regular: bool = False

    def describe(self, chosen: bool = False) -> str:
        money = f"{self.amount} {self.currency or '?'}"
        kind = "regular price" if self.regular else "price"
        said = "; ".join(self.evidence)
        return f"{'CHOSEN ' if chosen else ''}{money} ({kind}{': ' + said if said else ''})"


def collect(obs: Observation | None, origin: str | None, seen: Visible | None
            ) -> tuple[PriceCandidate, ...]:
    """Every candidate: the structured offers' prices first, then the visible ones (best
    score first, as `read_visible` keeps them)."""
    found: list[PriceCandidate] = []
    for offer in (obs.offers if obs is not None else ()):
        source = f"{origin or 'structured'} offer {offer.option!r}"
        if offer.special_price is not None:
            found.append(PriceCandidate(offer.special_price, offer.currency, source,
                                        ("its sale price",)))
        if offer.price is not None:
            regular = offer.special_price is not None
            found.append(PriceCandidate(offer.price, offer.currency, source,
                                        ("its regular price" if regular else "its price",),
                                        regular))
    found += [_visible(c) for c in (seen.prices if seen is not None else ())]
    return tuple(found)


def why(source: str) -> str:
    """The ranking rule that a price taken from `source` (`merge`'s name) won by."""
    return _RULES.get(source, f"rule 3 (structured offer): {source} is the shop's own data "
                              "about this product")


def _visible(candidate: Candidate) -> PriceCandidate:
    evidence = (f"shown as {candidate.text!r}", f"score {candidate.score:g}",
                *candidate.reasons)
    if candidate.struck:
        evidence += ("struck through or labelled as a list or former price",)
    if candidate.another_offer and not any("seller" in r for r in candidate.reasons):
        evidence += ("a used or another seller's offer",)
    return PriceCandidate(candidate.money.amount, candidate.money.currency, "visible",
                          evidence, candidate.struck)
