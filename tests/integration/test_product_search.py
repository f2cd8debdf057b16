"""Full-text product search (`ReadModel.search_products`, `projections.search`) on both
backends: every word must match, each in any of name, brand, category, store name or
description, the last one as a prefix; best match first; the store filter; a text
without words is refused."""

from __future__ import annotations

from datetime import timedelta

import pytest
from search_fixtures import PRODUCTS, T0, record, seeded

from domain.errors import InvalidInput
from ledger.bootstrap import Ledger


def names(ledger: Ledger, text: str, **options: object) -> list[str]:
    return [r["name"] for r in ledger.read.search_products(text, **options)]  # type: ignore[arg-type]


def test_every_word_matches_the_last_as_a_prefix(ledger: Ledger) -> None:
    seeded(ledger)
    assert set(names(ledger, "blue dre")) == {"Blue Dream Blue Dream", "Blue Dream"}
    assert set(names(ledger, "blue")) == {"Blue Dream", "Blueberry Kush", "Blue Dream Blue Dream"}
    assert names(ledger, "blue drea m") == []  # only the last word is a prefix
    assert names(ledger, "kush blue") == ["Blueberry Kush"]  # order of words does not matter
    assert set(names(ledger, "vaporizer")) == {"Sour Diesel Vape"}  # the category
    assert set(names(ledger, "KIVA")) == {"Dream Queen"}  # the brand, any case
    assert names(ledger, "blue queen") == []
    assert len(names(ledger, "blue", limit=1)) == 1


def test_descriptions_and_store_names_are_searched(ledger: Ledger) -> None:
    seeded(ledger)
    assert names(ledger, "citrus") == ["Sour Diesel Vape"]
    assert names(ledger, "evening kush") == ["Blueberry Kush"]  # words from two columns
    assert set(names(ledger, "green leaf")) == {p[0] for p in PRODUCTS}
    assert set(names(ledger, "green dream")) == {"Blue Dream", "Dream Queen",
                                                 "Blue Dream Blue Dream"}


def test_the_better_match_comes_first(ledger: Ledger) -> None:
    seeded(ledger)
    # "dream" twice in the name, against once: ranked higher
    assert names(ledger, "dream")[0] == "Blue Dream Blue Dream"
    # "diesel" in a name ranks above "diesel" in a description only
    seeded(ledger, [("Lemon Haze", "Acme", "Flower", "Diesel aroma, diesel taste, diesel.")],
           store_name="Corner", host="corner.example")
    assert names(ledger, "diesel") == ["Sour Diesel Vape", "Lemon Haze"]


def test_a_limit_keeps_the_best_matches_in_the_same_order(ledger: Ledger) -> None:
    tied = [(f"Haze {n}", "Acme", "Flower", "Diesel aroma.") for n in range(6)]
    seeded(ledger, tied, store_name="Corner", host="corner.example")
    seeded(ledger)  # "diesel" in a name, indexed after the six tied descriptions
    everything = names(ledger, "diesel")
    assert everything[0] == "Sour Diesel Vape" and len(everything) == 7
    for limit in (1, 3, 6):  # a shorter list is the start of the longer one, ties too
        assert names(ledger, "diesel", limit=limit) == everything[:limit]
    assert names(ledger, "diesel") == everything  # and the same again


def test_a_product_name_ranks_above_a_store_name(ledger: Ledger) -> None:
    seeded(ledger, [("Lemon Haze", "Acme", "Flower", None)], store_name="Dream Dispensary",
           host="dream.example")
    seeded(ledger)
    found = names(ledger, "dream")
    assert set(found[:3]) == {"Blue Dream", "Dream Queen", "Blue Dream Blue Dream"}
    assert found[3:] == ["Lemon Haze"]


def test_store_filter(ledger: Ledger) -> None:
    seeded(ledger)
    other = ledger.app.register_store(name="Other", base_url="https://other.example",
                                      platform="shopify", now=T0)
    job = ledger.app.schedule_job(kind="catalog", url="https://other.example/p.json",
                                  store_id=other, now=T0, every=3600)
    record(ledger, job, [("Blue Moon", "B", "Flower", None)], T0)
    assert "Blue Moon" in names(ledger, "blue")
    assert names(ledger, "blue", store_id=str(other)) == ["Blue Moon"]
    assert names(ledger, "blue dream", store_id=str(other)) == []


def test_results_are_current_products(ledger: Ledger) -> None:
    seeded(ledger)
    (found,) = ledger.read.search_products("queen")
    assert found == ledger.read.product(found["product_id"])


def test_the_index_follows_detail_changes(ledger: Ledger) -> None:
    job = seeded(ledger)
    renamed = [("Azure Dream", "Jeeter", "Flower", "Now with azure hues."), *PRODUCTS[1:]]
    record(ledger, job, renamed, T0 + timedelta(hours=1))
    assert "Blue Dream" not in names(ledger, "blue")
    assert names(ledger, "azure") == ["Azure Dream"]
    assert names(ledger, "hues") == ["Azure Dream"]  # a description seen later


@pytest.mark.parametrize("text", ["", "   ", '"', "*", "()", "-", "%_", "'", ":*"])
def test_a_text_without_words_is_refused(ledger: Ledger, text: str) -> None:
    with pytest.raises(InvalidInput):
        ledger.read.search_products(text)


def test_a_text_too_long_is_refused(ledger: Ledger) -> None:
    with pytest.raises(InvalidInput, match="longer than"):
        ledger.read.search_products("x" * 201)
