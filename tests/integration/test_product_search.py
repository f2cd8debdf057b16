"""Full-text product search (`ReadModel.search_products`, `projections.search`) on both
backends: every word must match, the last one as a prefix, best match first; store
names match too; the index follows renames and rebuilds and is filled for a read model
made before it existed; no text makes a query fail or match everything."""

from __future__ import annotations

from datetime import timedelta

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from search_fixtures import PRODUCTS, T0, record, seeded

from domain.errors import InvalidInput
from ledger.bootstrap import Ledger
from projections.rebuild import rebuild
from projections.search import search_table


def names(ledger: Ledger, text: str, **options: object) -> list[str]:
    return [r["name"] for r in ledger.read.search_products(text, **options)]  # type: ignore[arg-type]


def test_every_word_matches_the_last_as_a_prefix(ledger: Ledger) -> None:
    seeded(ledger)
    assert set(names(ledger, "blue dre")) == {"Blue Dream Blue Dream", "Blue Dream"}
    assert set(names(ledger, "blue")) == {"Blue Dream", "Blueberry Kush", "Blue Dream Blue Dream"}
    assert names(ledger, "kush blue") == ["Blueberry Kush"]  # order of words does not matter
    assert set(names(ledger, "vaporizer")) == {"Sour Diesel Vape"}  # the category
    assert set(names(ledger, "KIVA")) == {"Dream Queen"}  # the brand, any case
    assert names(ledger, "blue queen") == []
    assert len(names(ledger, "blue", limit=1)) == 1


def test_the_better_match_comes_first(ledger: Ledger) -> None:
    seeded(ledger)
    # "dream" twice in the name, against once: ranked higher
    assert names(ledger, "dream")[0] == "Blue Dream Blue Dream"


def test_store_names_match_after_the_products(ledger: Ledger) -> None:
    seeded(ledger)
    assert set(names(ledger, "green leaf")) == {p[0] for p in PRODUCTS}
    assert names(ledger, "green blue") == []  # one place must hold every word


def test_store_filter(ledger: Ledger) -> None:
    seeded(ledger)
    other = ledger.app.register_store(name="Other", base_url="https://other.example",
                                      platform="shopify", now=T0)
    job = ledger.app.schedule_job(kind="catalog", url="https://other.example/p.json",
                                  store_id=other, now=T0, every=3600)
    record(ledger, job, [("Blue Moon", "B", "Flower")], T0)
    assert "Blue Moon" in names(ledger, "blue")
    assert names(ledger, "blue", store_id=str(other)) == ["Blue Moon"]


def test_the_index_follows_changes_and_rebuilds(ledger: Ledger) -> None:
    job = seeded(ledger)
    renamed = [("Azure Dream", "Jeeter", "Flower"), *PRODUCTS[1:]]
    record(ledger, job, renamed, T0 + timedelta(hours=1))
    assert "Blue Dream" not in names(ledger, "blue")
    assert names(ledger, "azure") == ["Azure Dream"]
    rebuild(ledger.source, ledger.db, ledger.projections)
    assert names(ledger, "azure") == ["Azure Dream"]
    assert "Blue Dream" not in names(ledger, "blue")


def test_a_read_model_made_before_the_index_gets_it_filled(ledger: Ledger) -> None:
    seeded(ledger)
    index = search_table(ledger.db.dialect, "current_products")
    with ledger.db.transaction() as tx:  # as an older version left it: no index
        tx.execute(f"DROP TABLE {index}")
    for projection in ledger.projections():
        projection.create(ledger.db)
    assert set(names(ledger, "blue")) == {"Blue Dream", "Blueberry Kush", "Blue Dream Blue Dream"}
    assert names(ledger, "queen") == ["Dream Queen"]


@pytest.mark.parametrize("text", ["", "   ", '"', "*", "()", "-", "%_"])
def test_a_text_without_words_is_refused(ledger: Ledger, text: str) -> None:
    with pytest.raises(InvalidInput):
        ledger.read.search_products(text)


@settings(max_examples=60, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.text(min_size=1, max_size=60))
def test_no_text_breaks_a_query_or_widens_it(ledger: Ledger, text: str) -> None:
    """Query syntax in the text (quotes, *, AND, NEAR, :, &, !, parentheses) is only
    words: a query never fails, and a word found nowhere still finds nothing."""
    ledger.catch_up()
    if not ledger.read.stores():
        seeded(ledger)
    try:
        assert len(ledger.read.search_products(text)) <= len(PRODUCTS)
    except InvalidInput:
        pass
    assert ledger.read.search_products(f"{text} zqxj") == []
    assert ledger.read.search_products(f"zqxj {text} ") == []
